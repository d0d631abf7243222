package sharing

import (
	"os/exec"
	"strings"
	"testing"
)

// contains reports whether err is non-nil and its message holds s.
func contains(err error, s string) bool { return err != nil && strings.Contains(err.Error(), s) }

// The engine stays pure: no database, HTTP or template package in its imports.
func TestSharingIsPure(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/clearhouse/clearhouse/sharing/...").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "github.com/clearhouse/clearhouse/sharing") {
		t.Fatalf("go list did not list the package:\n%s", out)
	}
	for _, banned := range []string{"gorm.io/", "github.com/gin-gonic/", "github.com/a-h/templ", "database/sql", "net/http"} {
		if strings.Contains(string(out), banned) {
			t.Errorf("sharing depends on %s", banned)
		}
	}
}
