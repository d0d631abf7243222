package clearhouse_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Dependencies point one way (DESIGN.md, "Shape of the code"): web -> exchange and
// fleet -> the engines, ledger and store. A package importing one above it would
// make a cycle of responsibilities even where Go would still compile it.
func TestDependenciesPointOneWay(t *testing.T) {
	const mod = "github.com/clearhouse/clearhouse/"
	forbidden := map[string][]string{
		"exchange": {"fleet", "web", "templates", "cmd/"},
		"fleet":    {"web", "templates", "cmd/"},
		"ledger":   {"exchange", "fleet", "web", "templates"},
		"store":    {"ledger", "exchange", "fleet", "web", "templates"},
		"mailer":   {"store", "ledger", "exchange", "fleet", "web", "templates"},
	}
	for pkg, above := range forbidden {
		out, err := exec.Command("go", "list", "-deps", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			for _, a := range above {
				if strings.HasPrefix(dep, mod+a) {
					t.Errorf("%s depends on %s", pkg, dep)
				}
			}
		}
	}
}
