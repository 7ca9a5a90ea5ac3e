# zsh -f zsh-complete.zsh SCRIPT WORDS...: loads the completion script
# SCRIPT in an interactive zsh on a pseudo-terminal (completion runs only
# in the line editor), then for each WORDS types them and a tab, and prints
# the matches the completion functions offered, space-separated, one
# compadd call a line, and a line "--" after each WORDS. One shell serves
# every WORDS: starting one and its compinit is what costs.
# A SCRIPT named _depotfs is installed as a user would, in a directory of
# $fpath that compinit reads; any other is sourced.
zmodload zsh/zpty || exit 3
zpty z zsh -f -i
local out
if [[ ${1:t} == _depotfs ]]; then
  zpty -w z "PROMPT='%%%%P%%%% '; fpath=(${(q)1:h} \$fpath); autoload -Uz compinit; compinit -u -D"
else
  zpty -w z "PROMPT='%%%%P%%%% '; autoload -Uz compinit; compinit -u -D; source ${(q)1}"
fi
zpty -r z out '*%%P%% *' || exit 4
# compadd, wrapped: a call that adds matches first prints those that match
# what was typed (-O: matched as usual, stored instead of added).
zpty -w z 'compadd() { if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\ * ]]; then builtin compadd "$@"; return; fi; local -a m; builtin compadd -O m "$@"; (( $#m )) && print -r -- "MATCHES ${(j: :)m} END"; builtin compadd "$@" }'
zpty -r z out '*%%P%% *' || exit 5
local i=0 words
shift
for words in "$@"; do
  (( i++ ))
  zpty -n -w z "$words"$'\t'$'\C-u'
  # The echo of this line shows DONE$((1000+i)), its output DONE1001 and on.
  zpty -w z "print -r -- DONE\$((1000+$i))"
  zpty -r z out "*DONE$((1000+i))*" || exit 6
  print -r -- "${out//$'\r'/}" | grep -a -o 'MATCHES .* END' | sed 's/^MATCHES //; s/ END$//'
  print -r -- --
  # The next words are typed at the next prompt, not ahead of it: the
  # line editor may drop what was typed while it was away.
  zpty -r z out '*%%P%% *' || exit 7
done
zpty -d z
