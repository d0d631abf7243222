package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// The Dockerfile's commands exist: the two binaries built as its build stage builds
// them (same flags, version passed in) are copied into the image; clearhouse-agent
// carries the kubernetes backend; the server answers the image's CMD, its HEALTHCHECK
// command (against nothing listening: exit 1, not a usage error) and --version;
// the ENTRYPOINT is where the binary is copied; the base images are build
// arguments make passes.
func TestDeployDockerfileCommandsExist(t *testing.T) {
	b, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df := strings.ReplaceAll(string(b), "\\\n", " ")
	builds := regexp.MustCompile(`go build (-trimpath -ldflags "([^"]*)") +-o (\S+) (\S+)`).FindAllStringSubmatch(df, -1)
	if len(builds) != 2 || builds[0][4] != "./cmd/clearhouse" || builds[1][4] != "./cmd/clearhouse-agent" {
		t.Fatalf("go builds in the Dockerfile: %q; want ./cmd/clearhouse, then ./cmd/clearhouse-agent", builds)
	}
	// Built with the image's linker flags but without -trimpath: it changes only
	// the file paths recorded in the binary (Clearhouse reads neither its own
	// source paths nor its build information), and a -trimpath build shares
	// nothing in the build cache with this test's own build, so on a cold cache
	// it compiled every dependency (cgo SQLite included) a second time. That the
	// Dockerfile passes -trimpath is checked above.
	dir := t.TempDir()
	for _, build := range builds {
		ldflags := strings.ReplaceAll(build[2], "${VERSION}", "9.9.9-test")
		name := filepath.Base(build[4])
		cmd := exec.Command("go", "build", "-ldflags", ldflags, "-o", filepath.Join(dir, name), "../../"+strings.TrimPrefix(build[4], "./"))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s as the Dockerfile does: %v\n%s", build[4], err, out)
		}
		if !strings.Contains(df, "COPY --from=build "+build[3]+" /usr/local/bin/"+name) {
			t.Errorf("the built %s is not copied to /usr/local/bin/%s", build[3], name)
		}
	}
	bin := filepath.Join(dir, "clearhouse")
	jsonArgs := func(instr string) []string {
		m := regexp.MustCompile(`(?m)^` + instr + ` (\[.*\])`).FindStringSubmatch(df)
		if m == nil {
			t.Fatalf("no %s [...] in the Dockerfile", instr)
		}
		var args []string
		if err := json.Unmarshal([]byte(m[1]), &args); err != nil {
			t.Fatalf("%s: %v", instr, err)
		}
		return args
	}
	entry, cmdArgs := jsonArgs("ENTRYPOINT"), jsonArgs("CMD")
	if len(entry) != 1 || entry[0] != "/usr/local/bin/clearhouse" {
		t.Fatalf("ENTRYPOINT %v", entry)
	}
	health := regexp.MustCompile(`HEALTHCHECK [^\n]*CMD (\[.*\])`).FindStringSubmatch(df)
	if health == nil {
		t.Fatal("no HEALTHCHECK ... CMD [...]")
	}
	var healthArgs []string
	if err := json.Unmarshal([]byte(health[1]), &healthArgs); err != nil || len(healthArgs) < 2 || healthArgs[0] != entry[0] {
		t.Fatalf("HEALTHCHECK %v, %v", healthArgs, err)
	}
	runBin := func(args ...string) (int, string) {
		c := exec.Command(bin, args...)
		c.Env = append(os.Environ(), "CLEARHOUSE_ADDR=0.0.0.0:1") // as the image sets it, with nothing listening
		out, err := c.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), string(out)
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0, string(out)
	}
	if code, out := runBin(append(cmdArgs, "--help")...); code != 0 || !strings.Contains(out, "--metrics-addr") {
		t.Errorf("CMD %v --help: %d %s", cmdArgs, code, out)
	}
	if code, out := runBin(append(healthArgs[1:], "--help")...); code != 0 {
		t.Errorf("HEALTHCHECK %v --help: %d %s", healthArgs, code, out)
	}
	if code, out := runBin(healthArgs[1:]...); code != 1 || !strings.Contains(out, "127.0.0.1:1/readyz") {
		t.Errorf("HEALTHCHECK %v with no server: %d %s (want 1, asking 127.0.0.1:1/readyz)", healthArgs, code, out)
	}
	if code, out := runBin("--version"); code != 0 || !strings.Contains(out, "9.9.9-test") {
		t.Errorf("--version: %d %s", code, out)
	}
	agent := exec.Command(filepath.Join(dir, "clearhouse-agent"), "--version")
	if out, err := agent.CombinedOutput(); err != nil || !strings.Contains(string(out), "clearhouse-agent version 9.9.9-test") {
		t.Errorf("clearhouse-agent --version: %v %s", err, out)
	}
	agent = exec.Command(filepath.Join(dir, "clearhouse-agent"), "--backend", "kubernetes", "--server", "http://127.0.0.1:1", "--cluster", "c", "--token", "t")
	if out, err := agent.CombinedOutput(); !strings.Contains(string(out), "--config: required by --backend kubernetes") {
		t.Errorf("clearhouse-agent --backend kubernetes without --config: %v %s; want the kubernetes backend built in, asking for its config", err, out)
	}
	for _, arg := range []string{"ARG GO_IMAGE=", "ARG RUNTIME_IMAGE=", "FROM ${GO_IMAGE} AS build", "FROM ${RUNTIME_IMAGE}", "ARG VERSION"} {
		if !strings.Contains(df, arg) {
			t.Errorf("the Dockerfile lacks %q", arg)
		}
	}
	mk, _ := os.ReadFile("../../Makefile")
	for _, arg := range []string{"--build-arg VERSION=$(VERSION)", "--build-arg GO_IMAGE=$(GO_IMAGE)", "--build-arg RUNTIME_IMAGE=$(RUNTIME_IMAGE)"} {
		if !strings.Contains(string(mk), arg) {
			t.Errorf("make docker does not pass %s", arg)
		}
	}
}

// deploy/kubernetes/server.yaml carries what docs/operating.md recommends: /livez for
// liveness and start-up, /readyz for readiness, the metrics port the server listens on
// (CLEARHOUSE_METRICS_ADDR), and a termination grace period longer than the server's
// graceful shutdown, so that Kubernetes never kills it mid-settlement.
func TestDeployServerManifestProbesMetricsPortAndGrace(t *testing.T) {
	b, err := os.ReadFile("../../deploy/kubernetes/server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type probe struct {
		HTTPGet *struct {
			Path string
			Port string
		} `yaml:"httpGet"`
	}
	var pod struct {
		Kind string
		Spec struct {
			Template struct {
				Spec struct {
					Grace      *int `yaml:"terminationGracePeriodSeconds"`
					Containers []struct {
						Name  string
						Args  []string
						Env   []struct{ Name, Value string }
						Ports []struct {
							Name          string
							ContainerPort int `yaml:"containerPort"`
						}
						Liveness  *probe `yaml:"livenessProbe"`
						Readiness *probe `yaml:"readinessProbe"`
						Startup   *probe `yaml:"startupProbe"`
					}
				}
			}
		}
	}
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if err := yaml.Unmarshal([]byte(doc), &pod); err != nil {
			t.Fatal(err)
		}
		if pod.Kind == "Deployment" {
			break
		}
	}
	spec := pod.Spec.Template.Spec
	if pod.Kind != "Deployment" || len(spec.Containers) != 1 {
		t.Fatalf("no Deployment with one container in server.yaml: %+v", pod)
	}
	if spec.Grace == nil || time.Duration(*spec.Grace)*time.Second <= shutdownTimeout {
		t.Errorf("terminationGracePeriodSeconds %v, want more than the shutdown's %s", spec.Grace, shutdownTimeout)
	}
	c := spec.Containers[0]
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if want := "0.0.0.0:" + strconv.Itoa(ports["http"]); env["CLEARHOUSE_ADDR"] != want {
		t.Errorf("CLEARHOUSE_ADDR %q, port http %d", env["CLEARHOUSE_ADDR"], ports["http"])
	}
	if want := "0.0.0.0:" + strconv.Itoa(ports["metrics"]); ports["metrics"] == 0 || env["CLEARHOUSE_METRICS_ADDR"] != want {
		t.Errorf("CLEARHOUSE_METRICS_ADDR %q, port metrics %d", env["CLEARHOUSE_METRICS_ADDR"], ports["metrics"])
	}
	for name, p := range map[string]struct {
		probe *probe
		path  string
	}{"livenessProbe": {c.Liveness, "/livez"}, "startupProbe": {c.Startup, "/livez"}, "readinessProbe": {c.Readiness, "/readyz"}} {
		if p.probe == nil || p.probe.HTTPGet == nil || p.probe.HTTPGet.Path != p.path || p.probe.HTTPGet.Port != "http" {
			t.Errorf("%s: want GET %s on port http", name, p.path)
		}
	}
}
