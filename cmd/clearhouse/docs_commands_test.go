package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docCommandLines returns, for README.md and every page under docs/, the lines of its
// fenced code blocks, keyed "file:line", and the inline code spans of its prose that
// are clearhouse commands, keyed "file:line.n".
func docCommandLines(t *testing.T) map[string]string {
	t.Helper()
	files := []string{"../../README.md"}
	more, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	lines := map[string]string{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		fence := ""
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimLeft(sc.Text(), " ")
			switch {
			case fence == "" && (strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")):
				fence = line[:3]
			case fence != "" && strings.HasPrefix(line, fence):
				fence = ""
			case fence != "":
				lines[strings.TrimPrefix(file, "../../")+":"+strconv.Itoa(n)] = line
			default: // prose: its inline code spans that are commands
				for i, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
					lines[strings.TrimPrefix(file, "../../")+":"+strconv.Itoa(n)+"."+strconv.Itoa(i)] = m[1]
				}
			}
		}
		f.Close()
	}
	return lines
}

// inlineCommand is an inline code span holding a clearhouse command.
var inlineCommand = regexp.MustCompile("`((?:go run \\./cmd/)?clearhouse [^`]+)`")

// invocation finds "clearhouse ..." (or "go run ./cmd/clearhouse ...", "./clearhouse
// ...", "bin/clearhouse ...") that starts one command of a shell line (after
// environment assignments), follows "--" (kubectl exec) or opens "$(", and returns its
// words.
var invocation = regexp.MustCompile(`(?:^(?:[A-Z_]+=\S*\s+)*|\s--\s+|\$\()(?:go run \./cmd/clearhouse|\./clearhouse|bin/clearhouse|clearhouse)\s+(.*)$`)

// Every clearhouse command the README and the docs show in their code blocks exists,
// with every flag it is given: a page that names a command or flag the binary does not
// have fails here, not in a newcomer's terminal.
func TestDocsNameOnlyCommandsAndFlagsThatExist(t *testing.T) {
	root := newRootCmd()
	checked := 0
	for where, line := range docCommandLines(t) {
		line, _, _ = strings.Cut(line, " #") // a comment
		for _, part := range regexp.MustCompile(`\|\|?|&&|;`).Split(line, -1) {
			m := invocation.FindStringSubmatch(strings.TrimSpace(part))
			if m == nil {
				continue
			}
			words := strings.Fields(m[1])
			var args []string
			for _, w := range words {
				w = strings.Trim(w, "[]()\\")
				if w != "" {
					args = append(args, w)
				}
			}
			if len(args) == 0 || strings.ContainsAny(args[0], "<.") {
				continue // a placeholder: "clearhouse <verb> --help", "clearhouse ..."
			}
			cmd, rest, err := root.Find(args)
			if err != nil {
				t.Errorf("%s: %q: %v", where, strings.TrimSpace(part), err)
				continue
			}
			if cmd == root && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
				t.Errorf("%s: %q: no command %q", where, strings.TrimSpace(part), rest[0])
				continue
			}
			checked++
			for _, a := range rest {
				if !strings.HasPrefix(a, "--") || a == "--" {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
				if !hasFlag(cmd, name) {
					t.Errorf("%s: %q: %s has no flag --%s", where, strings.TrimSpace(part), cmd.CommandPath(), name)
				}
			}
		}
	}
	t.Logf("%d clearhouse commands in the docs checked", checked)
	if checked < 50 {
		t.Fatalf("checked %d commands in the docs; the parser finds too few", checked)
	}
}

func hasFlag(cmd *cobra.Command, name string) bool {
	if name == "help" || name == "version" && cmd.Root().Version != "" { // cobra adds them as it runs
		return true
	}
	return cmd.Flags().Lookup(name) != nil || cmd.InheritedFlags().Lookup(name) != nil || cmd.PersistentFlags().Lookup(name) != nil
}
