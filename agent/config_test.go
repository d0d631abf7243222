package agent

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const goodConfig = `cluster: us-east
teams:
  ads:
    namespaces: [ads, ads-batch]
    account: ads
  search:
    selector: "clearhouse.io/team=search"
pools:
  us-east/cpu: {resource: cpu, tres: cpu, unit: "1"}
  us-east/ram: {resource: memory, tres: mem, unit: "1Gi"}
kubernetes: {kubeconfig: /etc/kube, priority_class: clearhouse-best-effort, kueue: auto}
slurm: {cluster: linux, qos: clearhouse-best-effort, partition: batch}
`

func TestConfigReadsEveryKey(t *testing.T) {
	c, err := ParseConfig("c.yaml", []byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate("us-east"); err != nil {
		t.Fatal(err)
	}
	if ads := c.Teams["ads"]; !slices.Equal(ads.Namespaces, []string{"ads", "ads-batch"}) || ads.Account != "ads" {
		t.Errorf("team ads %+v", ads)
	}
	if c.Teams["search"].Selector != "clearhouse.io/team=search" {
		t.Errorf("team search %+v", c.Teams["search"])
	}
	if p := c.Pools["us-east/ram"]; p != (Pool{Resource: "memory", TRES: "mem", Unit: "1Gi"}) {
		t.Errorf("pool ram %+v", p)
	}
	if k := c.Kubernetes; k == nil || *k != (KubernetesSection{"/etc/kube", "clearhouse-best-effort", "auto"}) {
		t.Errorf("kubernetes %+v", k)
	}
	if s := c.Slurm; s == nil || *s != (SlurmSection{"linux", "clearhouse-best-effort", "batch"}) {
		t.Errorf("slurm %+v", s)
	}
	if got := c.Line("pools.us-east/ram.unit"); got != 10 {
		t.Errorf("line of pools.us-east/ram.unit %d, want 10", got)
	}
	if got := c.Line("teams.search.nothing"); got != 6 {
		t.Errorf("line of an absent key under teams.search %d, want 6 (its team's)", got)
	}
}

// Each rule of the file, broken once: the error names the file, the line and the rule.
func TestConfigRefusesEachBrokenRule(t *testing.T) {
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"not yaml", "cluster: us-east\nteams:\n\tads: {}\n", "c.yaml:3: not YAML: found character that cannot start any token"},
		{"empty", "", "c.yaml:1: empty"},
		{"top not a mapping", "- a\n", "c.yaml:1: the file: want a mapping"},
		{"unknown top key", "cluster: us-east\nclusters: x\n", "c.yaml:2: clusters: unknown key (known: cluster, kubernetes, pools, slurm, teams)"},
		{"unknown team key", "cluster: us-east\nteams:\n  ads:\n    namespace: ads\n", "c.yaml:4: teams.ads.namespace: unknown key (known: account, namespaces, selector)"},
		{"unknown pool key", "cluster: us-east\npools:\n  us-east/cpu: {unit: \"1\", units: 2}\n", "c.yaml:3: pools.us-east/cpu.units: unknown key"},
		{"unknown kubernetes key", "kubernetes:\n  kueue: on\n  queue: x\n", "c.yaml:3: kubernetes.queue: unknown key"},
		{"unknown slurm key", "slurm:\n\n  account: x\n", "c.yaml:3: slurm.account: unknown key"},
		{"key twice", "cluster: us-east\ncluster: us-west\n", "c.yaml:2: cluster: given twice (first at line 1)"},
		{"team twice", "teams:\n  ads: {}\n  ads: {}\n", "c.yaml:3: teams.ads: given twice (first at line 2)"},
		{"scalar wanted", "cluster: [us-east]\n", "c.yaml:1: cluster: want a single value"},
		{"null value", "cluster:\n", "c.yaml:1: cluster: want a single value"},
		{"list wanted", "teams:\n  ads:\n    namespaces: ads\n", "c.yaml:3: teams.ads.namespaces: want a list"},
		{"list of scalars", "teams:\n  ads:\n    namespaces:\n      - {a: b}\n", "c.yaml:4: teams.ads.namespaces[0]: want a single value"},
		{"teams a mapping", "teams: [ads]\n", "c.yaml:1: teams: want a mapping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig("c.yaml", []byte(tc.yaml))
			checkConfigError(t, err, tc.want)
		})
	}
}

func TestConfigValidateNamesEachRule(t *testing.T) {
	valid := func(mutate func(lines []string) []string) string {
		return strings.Join(mutate(strings.Split(goodConfig, "\n")), "\n")
	}
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"cluster differs", strings.Replace(goodConfig, "cluster: us-east", "cluster: us-west", 1),
			`c.yaml:1: cluster: "us-west" must equal --cluster "us-east"`},
		{"cluster missing", valid(func(l []string) []string { return l[1:] }),
			"c.yaml:1: cluster: required"},
		{"no teams", "cluster: us-east\nteams: {}\npools:\n  us-east/cpu: {unit: \"1\"}\n",
			"c.yaml:2: teams: at least one team"},
		{"empty team name", "cluster: us-east\nteams:\n  \"\": {account: x}\npools:\n  us-east/cpu: {unit: \"1\"}\n",
			"c.yaml:3: teams: a team name must not be empty"},
		{"no pools", "cluster: us-east\nteams:\n  ads: {account: ads}\n",
			"c.yaml:1: pools: at least one pool"},
		{"empty pool name", "cluster: us-east\nteams:\n  ads: {}\npools:\n  \"\": {unit: \"1\"}\n",
			"c.yaml:5: pools: a pool name must not be empty"},
		{"another cluster's pool", strings.Replace(goodConfig, "us-east/ram:", "us-west/ram:", 1),
			"c.yaml:10: pools.us-west/ram: not a pool of cluster us-east (want us-east/KIND)"},
		{"pool without a unit", strings.Replace(goodConfig, `tres: mem, unit: "1Gi"`, "tres: mem", 1),
			"c.yaml:10: pools.us-east/ram.unit: required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig("c.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			checkConfigError(t, c.Validate("us-east"), tc.want)
		})
	}
}

// LoadConfig runs the backend kind's own rules after the generic ones, and they name
// their line through Config.Errorf.
func TestLoadConfigRunsTheBackendsRules(t *testing.T) {
	path := filepath.Join(t.TempDir(), "us-east.yaml")
	if err := os.WriteFile(path, []byte(goodConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	k := Kind{Name: "test", Validate: func(c *Config) error {
		if c.Kubernetes.Kueue == "auto" {
			return c.Errorf("kubernetes.kueue", "kubernetes.kueue: %q refused by the test backend", c.Kubernetes.Kueue)
		}
		return nil
	}}
	_, err := LoadConfig(path, "us-east", k)
	checkConfigError(t, err, path+`:11: kubernetes.kueue: "auto" refused by the test backend`)
	if _, err := LoadConfig(path, "us-east", Kind{Name: "none"}); err != nil {
		t.Errorf("without a backend rule: %v", err)
	}
	if _, err := LoadConfig(path+".missing", "us-east", k); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Errorf("missing file: %v", err)
	}
}

func checkConfigError(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %q", want)
	}
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("error %T %v is not a *ConfigError", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error %q, want it to contain %q", err, want)
	}
}
