package kubernetes_test

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Each Deployment runs the binary of its component from the image: the server the
// image's entrypoint (clearhouse serve), the agent clearhouse-agent with the
// kubernetes backend, which the server's binary leaves out. Each command is a binary
// the Dockerfile copies into the image.
func TestManifestsRunTheRightBinary(t *testing.T) {
	df, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct{ command, args string }{
		"server": {"", "serve"},
		"agent":  {"/usr/local/bin/clearhouse-agent", "--backend kubernetes --config /etc/clearhouse/agent.yaml"},
	}
	seen := 0
	for _, o := range manifests(t) {
		if o.GetKind() != "Deployment" {
			continue
		}
		component := o.GetLabels()["app.kubernetes.io/component"]
		w, ok := want[component]
		if !ok {
			t.Errorf("Deployment %s: component %q; want server or agent", o.GetName(), component)
			continue
		}
		seen++
		containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
		if len(containers) != 1 {
			t.Fatalf("Deployment %s: %d containers, want 1", o.GetName(), len(containers))
		}
		c := containers[0].(map[string]any)
		command, _, _ := unstructured.NestedStringSlice(c, "command")
		args, _, _ := unstructured.NestedStringSlice(c, "args")
		if strings.Join(command, " ") != w.command || strings.Join(args, " ") != w.args {
			t.Errorf("Deployment %s runs command %q args %q; want %q %q", o.GetName(), command, args, w.command, w.args)
		}
		if w.command != "" && !strings.Contains(string(df), " "+w.command+"\n") {
			t.Errorf("Deployment %s runs %s, which the Dockerfile does not copy into the image", o.GetName(), w.command)
		}
	}
	if seen != len(want) {
		t.Errorf("%d Deployments of the server and the agent, want %d", seen, len(want))
	}
}
