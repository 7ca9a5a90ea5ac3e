package main

import (
	"bytes"
	"context"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"help"}, 0, []string{"Commands:", "compact", "completion", "depotfs help <command>"}},
		{[]string{"help", "serve"}, 0, []string{"Usage: depotfs serve", "--env-file", "Examples:", "depotfs serve --stdio"}},
		{[]string{"help", "status"}, 0, []string{"DEPOTFS_TOKEN", "Examples:", "--cert"}},
		{[]string{"help", "ca", "issue"}, 0, []string{"-grant", "Examples:"}},
		{[]string{"help", "compact"}, 0, []string{"offline", "Examples:"}},
		{[]string{"help", "nosuch"}, 2, nil},
	} {
		var out, errOut bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errOut)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d: %s", tc.args, code, tc.code, errOut.String())
		}
		for _, w := range tc.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v: output lacks %q:\n%s", tc.args, w, out.String())
			}
		}
	}
}

func completion(t *testing.T, shell string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"completion", shell}, &out, &errOut); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errOut.String())
	}
	return out.String()
}

// completionCases are words typed before a tab and what each shell's
// script must offer for them: commands, subcommands and each command's
// own flags (none of another command's).
var completionCases = map[string]string{
	"depotfs com":                  "compact completion",
	"depotfs serve --allow-n":      "--allow-non-empty-mount",
	"depotfs ca is":                "issue",
	"depotfs ca issue --gr":        "--grant",
	"depotfs status --tok":         "--token-file",
	"depotfs completion f":         "fish",
	"depotfs token revoke --to":    "--tokens",
	"depotfs audit query --decisi": "--decision",
}

// completionScript writes depotfs's completion script for shell to a file
// and returns its path.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "depotfs."+shell)
	if err := os.WriteFile(script, []byte(completion(t, shell)), 0o644); err != nil {
		t.Fatal(err)
	}
	return script
}

// needShell skips the test when shell is not installed: the suite needs
// nothing but Go and FUSE.
func needShell(t *testing.T, shell string) {
	t.Helper()
	if _, err := exec.LookPath(shell); err != nil {
		t.Skipf("%s is not installed: its completion script is only checked for content (TestCompletionZshFish); install %s to run it", shell, shell)
	}
}

// TestCompletionBash runs the generated script in bash.
func TestCompletionBash(t *testing.T) {
	needShell(t, "bash")
	script := completionScript(t, "bash")
	for words, want := range completionCases {
		cmd := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=($2); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _depotfs; echo "${COMPREPLY[*]}"`, "-", script, words)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("%q completes to %q (%v), want %q", words, out, err, want)
		}
	}
}

// TestCompletionZsh loads the generated script into zsh's completion
// system in an interactive zsh on a pseudo-terminal
// (testdata/zsh-complete.zsh), types the words and a tab, and reads the
// matches the script's functions offered; both ways the docs give: sourced,
// and installed as _depotfs in $fpath, where the first tab already
// completes.
func TestCompletionZsh(t *testing.T) {
	needShell(t, "zsh")
	sourced := completionScript(t, "zsh")
	installed := filepath.Join(t.TempDir(), "_depotfs")
	if err := os.WriteFile(installed, []byte(completion(t, "zsh")), 0o644); err != nil {
		t.Fatal(err)
	}
	driver, err := filepath.Abs("testdata/zsh-complete.zsh")
	if err != nil {
		t.Fatal(err)
	}
	// One zsh per script types every case: a zsh each (and its compinit)
	// cost 7 s a case under load. The first case is still the first tab
	// of its shell.
	words := slices.Sorted(maps.Keys(completionCases))
	for _, script := range []string{sourced, installed} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		cmd := exec.CommandContext(ctx, "zsh", append([]string{"-f", driver, script}, words...)...)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		cancel()
		got := strings.Split(string(out), "--\n")
		if err != nil || len(got) != len(words)+1 {
			t.Errorf("%s: %v, output for %d cases, want %d:\n%s", filepath.Base(script), err, len(got)-1, len(words), out)
			continue
		}
		for i, w := range words {
			if strings.TrimSpace(got[i]) != completionCases[w] {
				t.Errorf("%s: %q completes to %q, want %q", filepath.Base(script), w, got[i], completionCases[w])
			}
		}
	}
}

// TestCompletionFish sources the generated script in fish and asks fish
// for the completions of each line (complete -C).
func TestCompletionFish(t *testing.T) {
	needShell(t, "fish")
	script := completionScript(t, "fish")
	for words, want := range completionCases {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, "fish", "--no-config", "-c", "source $argv[1]; complete -C $argv[2]", script, words)
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		cancel()
		var got []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			name, _, _ := strings.Cut(line, "\t") // a candidate, then its description
			got = append(got, name)
		}
		if err != nil || strings.Join(got, " ") != want {
			t.Errorf("%q completes to %q (%v), want %q", words, out, err, want)
		}
	}
}

func TestCompletionZshFish(t *testing.T) {
	for _, shell := range []string{"zsh", "fish"} {
		s := completion(t, shell)
		for _, w := range []string{"serve", "compact", "allow-non-empty-mount", "token-file", "issue"} {
			if !strings.Contains(s, w) {
				t.Errorf("%s completion lacks %q", shell, w)
			}
		}
		if _, err := exec.LookPath(shell); err != nil {
			continue // checked for content only
		}
		check := exec.Command(shell, "-n")
		check.Stdin = strings.NewReader(s)
		if out, err := check.CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", shell, err, out)
		}
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"completion", "tcsh"}, &out, &errOut); code != 2 {
		t.Errorf("completion tcsh: exit %d", code)
	}
}
