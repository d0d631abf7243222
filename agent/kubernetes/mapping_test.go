package kubernetes

import (
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/agent"
)

// A bad kubernetes part of a config file is refused at start, each rule at its line.
func TestConfigRulesNameTheLine(t *testing.T) {
	file := `cluster: c
teams:
  a: {}
  b: {namespaces: [b], selector: "x=y"}
  c: {namespaces: [Not_A_Name]}
  d: {selector: "=bad"}
pools:
  c/cpu: {unit: "1"}
  c/ram: {resource: requests.memory, unit: "1Gi"}
  c/gpu: {resource: nvidia.com/gpu, unit: "-1"}
kubernetes: {priority_class: "Bad Class", kueue: yes}
`
	cfg, err := agent.ParseConfig("x.yaml", []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	err = validate(cfg)
	if err == nil {
		t.Fatal("a bad config was accepted")
	}
	for _, want := range []string{
		"x.yaml:3: teams.a: give namespaces",
		"x.yaml:4: teams.b: give namespaces or selector, not both",
		`x.yaml:5: teams.c.namespaces: "Not_A_Name" is not a namespace name`,
		`x.yaml:6: teams.d.selector: "=bad"`,
		"x.yaml:8: pools.c/cpu.resource: required",
		`x.yaml:9: pools.c/ram.resource: "requests.memory" is not a resource name`,
		`x.yaml:10: pools.c/gpu.unit: "-1" is not a positive quantity`,
		`x.yaml:11: kubernetes.priority_class: "Bad Class"`,
		`x.yaml:11: kubernetes.kueue: "yes" is not auto, on or off`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("missing %q in\n%v", want, err)
		}
	}
	good, err := agent.ParseConfig("y.yaml", []byte("cluster: c\nteams:\n  a: {namespaces: [a, a-batch]}\npools:\n  c/ram: {resource: memory, unit: 500Mi}\n"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := newMapping(good)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := m.pool("c/ram")
	if q := p.quantity(4); q.String() != "2000Mi" || p.unitsUp(1) != 1 || p.unitsDown(p.unit.MilliValue()*3-1) != 2 {
		t.Fatalf("4 units of 500Mi = %s", q.String())
	}
	if m.priorityClass != DefaultPriorityClass || m.kueue != "auto" {
		t.Fatalf("defaults: %q %q", m.priorityClass, m.kueue)
	}
}
