package clearhouse_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// createdByTheDoc lists, per document, the relative paths its fenced commands name that
// an earlier step of the same document creates (a config file whose content the page
// shows, written by the reader before the command that reads it).
var createdByTheDoc = map[string][]string{
	"docs/agent-config.md":       {"us-east.yaml"},
	"docs/kubernetes.md":         {"us-east.yaml"},
	"docs/kubernetes-backend.md": {"us-east.yaml"},
	"docs/slurm.md":              {"hpc.yaml"},
}

// docFiles returns README.md and every Markdown file under docs/.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	err := filepath.WalkDir("docs", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found %d documents (%v); want README.md and the docs/ pages", len(files), files)
	}
	return files
}

// fencedLines returns the lines inside the fenced code blocks (``` or ~~~) of a
// Markdown file, with their line numbers, and the lines outside them.
func fencedLines(t *testing.T, file string) (code, prose map[int]string) {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code, prose = map[int]string{}, map[int]string{}
	fence := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
		case fence != "":
			code[n] = line
		default:
			prose[n] = line
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if fence != "" {
		t.Errorf("%s: a fenced code block is never closed", file)
	}
	return code, prose
}

var (
	// dataFile is an argument that names a data or configuration file.
	dataFile = regexp.MustCompile(`^[A-Za-z0-9_.][A-Za-z0-9_./+-]*\.(swf|csv|tsv|json|yaml|yml|txt|gz|sql|toml|xml)$`)
	// placeholder is a name that stands for the reader's own file: FILE.csv, OUT.json.
	placeholder = regexp.MustCompile(`^[A-Z0-9_]+\.[a-z]+$`)
	// outputFlags precede a path the command writes rather than reads.
	outputFlags = map[string]bool{"--out": true, "--report": true, "-o": true, ">": true, ">>": true, "--file": true}
)

// pathsIn returns the arguments of a command line that name files or directories of
// the repository: data files by their extension, and any path whose first element is
// a directory at the repository's root (cmd/..., ./scripts/..., deploy/kubernetes/).
// Absolute paths, URLs, variables, placeholders and outputs are left out.
func pathsIn(line string, rootDirs map[string]bool) (paths, outside []string) {
	if i := strings.Index(line, " #"); i >= 0 {
		line = line[:i]
	}
	if strings.HasPrefix(strings.TrimSpace(line), "#") {
		return nil, nil
	}
	tokens := strings.FieldsFunc(line, func(r rune) bool {
		return unicode.IsSpace(r) || strings.ContainsRune(`;|()'"`+"`"+`=,`, r)
	})
	kubectl := len(tokens) > 0 && tokens[0] == "kubectl"
	for i, tok := range tokens {
		tok = strings.TrimSuffix(strings.TrimSuffix(tok, "\\"), ":")
		if tok == "" || (i > 0 && outputFlags[tokens[i-1]]) {
			continue
		}
		if kubectl && (i == 0 || (tokens[i-1] != "-f" && tokens[i-1] != "--filename")) {
			continue // deploy/NAME is a resource of the cluster; only -f names a file
		}
		if strings.HasPrefix(tok, "../") {
			outside = append(outside, tok)
			continue
		}
		if strings.HasPrefix(tok, "/") || strings.HasPrefix(tok, "-") || strings.Contains(tok, "://") ||
			strings.ContainsAny(tok, "$*<>[]{}~") || strings.Contains(tok, "...") {
			continue
		}
		clean := strings.TrimPrefix(tok, "./")
		first := strings.SplitN(clean, "/", 2)[0]
		switch {
		case dataFile.MatchString(clean) && !placeholder.MatchString(filepath.Base(clean)):
			paths = append(paths, clean)
		case strings.Contains(clean, "/") && rootDirs[first]:
			paths = append(paths, clean)
		}
	}
	return paths, outside
}

// Every command in the docs runs from a fresh clone: the files and directories that
// fenced code blocks of README.md and docs/ name exist in the repository, and none
// points outside it (../shared/...). A file an earlier step of the same page creates
// is listed in createdByTheDoc.
func TestDocsCommandsNameFilesInTheRepository(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	rootDirs := map[string]bool{}
	for _, e := range entries {
		// bin/ and screenshots/ are outputs (.gitignore), absent from a fresh clone.
		if e.IsDir() && e.Name() != ".git" && e.Name() != "bin" && e.Name() != "screenshots" {
			rootDirs[e.Name()] = true
		}
	}
	checked := 0
	for _, file := range docFiles(t) {
		created := map[string]bool{}
		for _, p := range createdByTheDoc[file] {
			created[p] = true
		}
		code, prose := fencedLines(t, file)
		// Commands quoted inline in the prose (`go test ... ./fleet`) count too.
		for n, line := range prose {
			for _, m := range inlineCommand.FindAllStringSubmatch(line, -1) {
				code[n] += "\n" + m[1]
			}
		}
		for n, text := range code {
			for _, line := range strings.Split(text, "\n") {
				paths, outside := pathsIn(line, rootDirs)
				for _, p := range outside {
					t.Errorf("%s:%d: %s is outside the repository; put the data in the repository (testdata/ or docs/data/) and name it there", file, n, p)
				}
				for _, p := range paths {
					if strings.Contains(line, "shared/data/") || strings.Contains(line, "shared/papers/") {
						t.Errorf("%s:%d: names the project's shared workspace, not a file of the repository", file, n)
					}
					if created[p] {
						continue
					}
					checked++
					if _, err := os.Stat(p); err != nil {
						t.Errorf("%s:%d: %s does not exist in the repository (a file an earlier step of the page creates goes in createdByTheDoc)", file, n, p)
					}
				}
			}
		}
	}
	t.Logf("checked %d paths named by the docs' commands", checked)
	if checked < 10 {
		t.Errorf("checked %d paths in the docs' commands; the extraction is likely broken", checked)
	}
}

// inlineCommand is a command quoted in prose: `clearhouse ...`, `go test ...`.
var inlineCommand = regexp.MustCompile("`((?:clearhouse|go|make|kubectl|\\./bin/clearhouse|time clearhouse) [^`]+)`")

var (
	mdLink  = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// anchor is GitHub's anchor for a heading: lower case, punctuation dropped, spaces as
// hyphens.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func anchorsOf(t *testing.T, file string) map[string]bool {
	t.Helper()
	_, prose := fencedLines(t, file)
	anchors := map[string]bool{}
	for _, line := range prose {
		if m := heading.FindStringSubmatch(line); m != nil {
			anchors[anchor(m[1])] = true
		}
	}
	return anchors
}

// The links between README.md and the docs/ pages lead somewhere: every relative link
// names a file of the repository and, with a #fragment, a heading of that file.
func TestDocsLinksLeadSomewhere(t *testing.T) {
	anchors := map[string]map[string]bool{}
	links := 0
	for _, file := range docFiles(t) {
		_, prose := fencedLines(t, file)
		for n, line := range prose {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				if path == "" {
					path = file
				} else {
					path = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				}
				links++
				if _, err := os.Stat(path); err != nil {
					t.Errorf("%s:%d: link to %s: no such file in the repository", file, n, target)
					continue
				}
				if frag == "" || !strings.HasSuffix(path, ".md") {
					continue
				}
				if anchors[path] == nil {
					anchors[path] = anchorsOf(t, path)
				}
				if !anchors[path][frag] {
					t.Errorf("%s:%d: link to %s: %s has no heading with anchor #%s", file, n, target, path, frag)
				}
			}
		}
	}
	t.Logf("checked %d relative links", links)
	if links < 20 {
		t.Errorf("found %d relative links in the docs; the extraction is likely broken", links)
	}
}

// The extraction itself, on lines written to trip it.
func TestDocsPathExtraction(t *testing.T) {
	dirs := map[string]bool{"cmd": true, "deploy": true, "scripts": true, "docs": true}
	cases := []struct {
		line          string
		want, outside string
	}{
		{"go run ./cmd/clearhouse share simulate --workload cmd/clearhouse/testdata/hpc2n.swf --orgs 5", "cmd/clearhouse cmd/clearhouse/testdata/hpc2n.swf", ""},
		{"clearhouse simulate --workload ../shared/data/hpc2n.swf --capacity 240", "", "../shared/data/hpc2n.swf"},
		{"clearhouse simulate --generate mapreduce --report sim.html --out result.json", "", ""},
		{"clearhouse simulate --workload FILE.csv|FILE.swf --capacity UNITS", "", ""},
		{"kubectl apply -f deploy/kubernetes/namespaces.yaml   # the namespaces.yaml of nothing", "deploy/kubernetes/namespaces.yaml", ""},
		{"clearhouse agent --owner-usage /var/run/owners.json --config=us-east.yaml", "us-east.yaml", ""},
		{`curl -d '{"a":1}' http://127.0.0.1:8080/api/v1/openapi.json`, "", ""},
		{"# clearhouse abacus solve --in jobs.json", "", ""},
		{"eval \"$(scripts/slurm-up.sh)\"", "scripts/slurm-up.sh", ""},
		{"kubectl -n clearhouse exec deploy/clearhouse-server -- clearhouse agent token", "", ""},
		{"us-east/cpu: {resource: cpu, unit: \"1\"}", "", ""},
	}
	for _, c := range cases {
		got, outside := pathsIn(c.line, dirs)
		if strings.Join(got, " ") != c.want || strings.Join(outside, " ") != c.outside {
			t.Errorf("pathsIn(%q) = %q, outside %q; want %q, outside %q", c.line, got, outside, c.want, c.outside)
		}
	}
	inline := inlineCommand.FindAllStringSubmatch("run `go test ./fleet -run X` and `fleet.Plan`, then `clearhouse share simulate --workload a.swf`", -1)
	if len(inline) != 2 || inline[0][1] != "go test ./fleet -run X" || inline[1][1] != "clearhouse share simulate --workload a.swf" {
		t.Errorf("inline commands found: %q; want the go test and the clearhouse command", inline)
	}
	for h, want := range map[string]string{
		"Auction engine": "auction-engine",
		"The experiment: `clearhouse share simulate`": "the-experiment-clearhouse-share-simulate",
		"Idle capacity: the sharing engine":           "idle-capacity-the-sharing-engine",
	} {
		if got := anchor(h); got != want {
			t.Errorf("anchor(%q) = %q, want %q", h, got, want)
		}
	}
}
