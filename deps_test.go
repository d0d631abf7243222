package clearhouse_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Dependencies point one way (DESIGN.md, "Shape of the code"): web -> exchange and
// fleet -> the engines, ledger and store, and any of them -> identity (which imports
// none of them but store); exchange -> notify -> identity. A package importing one
// above it would make a cycle of responsibilities even where Go would still compile
// it.
func TestDependenciesPointOneWay(t *testing.T) {
	const mod = "github.com/clearhouse/clearhouse/"
	server := []string{"exchange", "identity", "notify", "fleet", "web", "templates", "store", "ledger", "auction", "scheduler", "sharing", "mailer", "moneyfmt", "cmd/"}
	forbidden := map[string][]string{
		"exchange": {"fleet", "web", "templates", "cmd/"},
		"identity": {"exchange", "notify", "fleet", "web", "templates", "cmd/"},
		"notify":   {"exchange", "fleet", "web", "templates", "cmd/"},
		"fleet":    {"web", "templates", "cmd/"},
		"ledger":   {"exchange", "fleet", "web", "templates"},
		"store":    {"ledger", "exchange", "identity", "notify", "fleet", "web", "templates"},
		"mailer":   {"store", "ledger", "exchange", "identity", "notify", "fleet", "web", "templates"},
		// The cluster agent speaks only the JSON API, as any other agent would.
		"agent":          server,
		"agent/simulate": server,
	}
	for pkg, above := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if pkg == "agent" || strings.HasPrefix(pkg, "agent/") {
				if dep == strings.TrimSuffix(mod, "/") {
					t.Errorf("%s depends on the server's root package", pkg)
				}
			}
			for _, a := range above {
				if strings.HasPrefix(dep, mod+a) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
