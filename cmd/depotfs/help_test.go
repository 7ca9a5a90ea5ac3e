package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// TestCompletionBash runs the generated script in bash: commands,
// subcommands and each command's own flags complete.
func TestCompletionBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	script := filepath.Join(t.TempDir(), "depotfs.bash")
	if err := os.WriteFile(script, []byte(completion(t, "bash")), 0o644); err != nil {
		t.Fatal(err)
	}
	for words, want := range map[string]string{
		"depotfs com":                  "compact completion",
		"depotfs serve --allow-n":      "--allow-non-empty-mount",
		"depotfs ca is":                "issue",
		"depotfs ca issue --gr":        "--grant",
		"depotfs status --tok":         "--token-file",
		"depotfs completion f":         "fish",
		"depotfs token revoke --to":    "--tokens",
		"depotfs audit query --decisi": "--decision",
	} {
		cmd := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=($2); COMP_CWORD=$((${#COMP_WORDS[@]}-1)); _depotfs; echo "${COMPREPLY[*]}"`, "-", script, words)
		out, err := cmd.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
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
