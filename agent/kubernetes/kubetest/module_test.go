package kubetest_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The control plane is built from tools/kube and Kueue's controller from tools/kueue,
// modules of their own: the product's module graph must not pull in k8s.io/kubernetes
// (and its hundreds of dependencies), and `go list ./...` from the root must not descend
// into either.
func TestProductModuleLeavesTheControlPlaneOut(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "all").Output()
	if err != nil {
		t.Fatalf("go list -m all: %v", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 0 && (f[0] == "k8s.io/kubernetes" || f[0] == "sigs.k8s.io/kwok") {
			t.Errorf("the product module requires %s", line)
		}
	}
	pkgs, err := exec.Command("go", "list", "github.com/clearhouse/clearhouse/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, m := range []string{"/tools/kube", "/tools/kueue"} {
		if strings.Contains(string(pkgs), m) {
			t.Errorf("go list ./... includes %s:\n%s", m, pkgs)
		}
	}
}
