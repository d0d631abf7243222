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

	"github.com/clearhouse/clearhouse/agent/agentcmd"
)

// docCommandLines returns, for README.md and every page under docs/, the lines of its
// fenced code blocks (a line ending in \ joined with the next), keyed "file:line", and the inline code spans of its prose that
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
		fence, continued, start := "", "", 0 // continued: a code line ending in \ so far, from line start
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimLeft(sc.Text(), " ")
			switch {
			case fence == "" && (strings.HasPrefix(line, "```") || strings.HasPrefix(line, "~~~")):
				fence = line[:3]
			case fence != "" && strings.HasPrefix(line, fence):
				fence = ""
			case fence != "" && strings.HasSuffix(line, "\\"): // a command going on on the next line
				if continued == "" {
					start = n
				}
				continued += strings.TrimSuffix(line, "\\")
			case fence != "" && continued != "":
				lines[strings.TrimPrefix(file, "../../")+":"+strconv.Itoa(start)] = continued + line
				continued = ""
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

// inlineCommand is an inline code span holding a clearhouse or clearhouse-agent command.
var inlineCommand = regexp.MustCompile("`((?:go run \\./cmd/)?clearhouse(?:-agent)? [^`]+)`")

// invocation finds "clearhouse ..." (or "go run ./cmd/clearhouse ...", "./clearhouse
// ...", "./bin/clearhouse ...", "bin/clearhouse ...") that starts one command of a
// shell line (after environment assignments), follows "--" (kubectl exec) or opens
// "$(", and returns its words.
var invocation = regexp.MustCompile(`(?:^(?:[A-Z_]+=\S*\s+)*|\s--\s+|\$\()(?:go run \./cmd/clearhouse|\./clearhouse|\./bin/clearhouse|bin/clearhouse|clearhouse)\s+(.*)$`)

// agentInvocation finds clearhouse-agent's commands as invocation finds clearhouse's.
var agentInvocation = regexp.MustCompile(`(?:^(?:[A-Z_]+=\S*\s+)*|\s--\s+|\$\()(?:go run \./cmd/clearhouse-agent|\./clearhouse-agent|\./bin/clearhouse-agent|bin/clearhouse-agent|clearhouse-agent)\s+(.*)$`)

// Every clearhouse and clearhouse-agent command the README and the docs show in their
// code blocks exists, with every flag it is given, and none asks the server's
// clearhouse agent for the kubernetes backend it leaves out: a page that names a
// command or flag the binary does not have fails here, not in a newcomer's terminal.
func TestDocsNameOnlyCommandsAndFlagsThatExist(t *testing.T) {
	server, agentBinary := newRootCmd(), agentcmd.Root(agentcmd.Options{Path: agentcmd.Binary, Version: version})
	checked, agentChecked := 0, 0
	for where, line := range docCommandLines(t) {
		line, _, _ = strings.Cut(line, " #") // a comment
		for _, part := range regexp.MustCompile(`\|\|?|&&|;`).Split(line, -1) {
			root := server
			m := invocation.FindStringSubmatch(strings.TrimSpace(part))
			if m == nil {
				if m = agentInvocation.FindStringSubmatch(strings.TrimSpace(part)); m == nil {
					continue
				}
				root = agentBinary
				agentChecked++
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
			if cmd.CommandPath() == "clearhouse agent" && strings.Contains(" "+strings.Join(rest, " ")+" ", " --backend kubernetes ") {
				t.Errorf("%s: %q: the server's clearhouse agent has no kubernetes backend; the page should run clearhouse-agent", where, strings.TrimSpace(part))
			}
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
	t.Logf("%d clearhouse commands in the docs checked, %d of them clearhouse-agent's", checked, agentChecked)
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
