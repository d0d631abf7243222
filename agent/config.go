package agent

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Config is one cluster's agent configuration file: how Clearhouse's teams and pools
// map to the cluster manager's own names, and each backend's section. Documented in
// docs/agent-config.md.
type Config struct {
	// File is the path the config was read from: errors name it.
	File string
	// Cluster must equal the agent's --cluster.
	Cluster string
	// Teams maps a Clearhouse team to its names in the cluster.
	Teams map[string]Team
	// Pools maps a Clearhouse pool ("us-east/cpu") to the manager's resource.
	Pools map[string]Pool
	// Kubernetes and Slurm are the backends' sections (nil when absent).
	Kubernetes *KubernetesSection
	Slurm      *SlurmSection

	lines map[string]int // the line of each key path ("teams.ads.account"), for errors
}

// Team is a team's names in the cluster: Kubernetes namespaces (or a label selector
// of namespaces), a Slurm account.
type Team struct {
	Namespaces []string
	Selector   string
	Account    string
}

// Pool is a pool's resource in the cluster: Kubernetes' resource name ("cpu",
// "memory", "nvidia.com/gpu"), Slurm's TRES ("cpu", "mem", "gres/gpu"), and how much
// of the resource one unit of the pool is ("1", "1Gi"; Slurm memory "1G").
type Pool struct {
	Resource string
	TRES     string
	Unit     string
}

// KubernetesSection is the kubernetes backend's section: the kubeconfig (empty: in
// cluster), the PriorityClass of best-effort pods, and whether to write Kueue queues
// ("auto": when its CRDs are installed, "on", "off").
type KubernetesSection struct {
	Kubeconfig    string
	PriorityClass string
	Kueue         string
}

// SlurmSection is the slurm backend's section: the Slurm cluster name, the QOS of
// best-effort jobs, and the partition they run in.
type SlurmSection struct {
	Cluster   string
	QOS       string
	Partition string
}

// ConfigError is one broken rule of a config file, at a line.
type ConfigError struct {
	File string
	Line int
	Rule string
}

func (e *ConfigError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Rule) }

// Line returns the line of the key at path (dot-separated: "pools.us-east/cpu.unit"),
// or of the closest enclosing key given, or 1.
func (c *Config) Line(path string) int {
	for {
		if n, ok := c.lines[path]; ok {
			return n
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return 1
		}
		path = path[:i]
	}
}

// Errorf returns a *ConfigError at the line of path: how backends report a rule their
// section or mapping fields break.
func (c *Config) Errorf(path, format string, args ...any) error {
	return &ConfigError{File: c.File, Line: c.Line(path), Rule: fmt.Sprintf(format, args...)}
}

// LoadConfig reads the config file at path and validates it for cluster and the
// backend kind k (the generic rules, then the kind's own). Every broken rule is in the
// error, each as FILE:LINE: rule.
func LoadConfig(path, cluster string, k Kind) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	c, err := ParseConfig(path, data)
	if err != nil {
		return nil, err
	}
	if err := c.Validate(cluster); err != nil {
		return nil, err
	}
	if k.Validate != nil {
		if err := k.Validate(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// ParseConfig reads a config file's YAML (file names it in errors). It refuses what
// is not YAML, unknown keys, keys given twice and values of the wrong shape; it checks
// no rule between values (Validate does).
func ParseConfig(file string, data []byte) (*Config, error) {
	c := &Config{File: file, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, yamlError(file, err)
	}
	if len(doc.Content) == 0 {
		return nil, &ConfigError{file, 1, "empty: want at least cluster, teams and pools"}
	}
	p := parser{c: c}
	p.mapping(doc.Content[0], "", map[string]func(*yaml.Node, string){
		"cluster": func(n *yaml.Node, path string) { p.scalar(n, path, &c.Cluster) },
		"teams": func(n *yaml.Node, path string) {
			c.Teams = map[string]Team{}
			p.each(n, path, func(name string, n *yaml.Node, path string) {
				var t Team
				p.mapping(n, path, map[string]func(*yaml.Node, string){
					"namespaces": func(n *yaml.Node, path string) { p.list(n, path, &t.Namespaces) },
					"selector":   func(n *yaml.Node, path string) { p.scalar(n, path, &t.Selector) },
					"account":    func(n *yaml.Node, path string) { p.scalar(n, path, &t.Account) },
				})
				c.Teams[name] = t
			})
		},
		"pools": func(n *yaml.Node, path string) {
			c.Pools = map[string]Pool{}
			p.each(n, path, func(name string, n *yaml.Node, path string) {
				var pl Pool
				p.mapping(n, path, map[string]func(*yaml.Node, string){
					"resource": func(n *yaml.Node, path string) { p.scalar(n, path, &pl.Resource) },
					"tres":     func(n *yaml.Node, path string) { p.scalar(n, path, &pl.TRES) },
					"unit":     func(n *yaml.Node, path string) { p.scalar(n, path, &pl.Unit) },
				})
				c.Pools[name] = pl
			})
		},
		"kubernetes": func(n *yaml.Node, path string) {
			k := &KubernetesSection{}
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"kubeconfig":     func(n *yaml.Node, path string) { p.scalar(n, path, &k.Kubeconfig) },
				"priority_class": func(n *yaml.Node, path string) { p.scalar(n, path, &k.PriorityClass) },
				"kueue":          func(n *yaml.Node, path string) { p.scalar(n, path, &k.Kueue) },
			})
			c.Kubernetes = k
		},
		"slurm": func(n *yaml.Node, path string) {
			s := &SlurmSection{}
			p.mapping(n, path, map[string]func(*yaml.Node, string){
				"cluster":   func(n *yaml.Node, path string) { p.scalar(n, path, &s.Cluster) },
				"qos":       func(n *yaml.Node, path string) { p.scalar(n, path, &s.QOS) },
				"partition": func(n *yaml.Node, path string) { p.scalar(n, path, &s.Partition) },
			})
			c.Slurm = s
		},
	})
	if err := errors.Join(p.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// Validate checks the rules every backend relies on: cluster equals the agent's
// cluster; at least one team and one pool; no empty team or pool name; each pool is
// one of the cluster's ("us-east/cpu" for us-east) and has a unit.
func (c *Config) Validate(cluster string) error {
	var errs []error
	switch {
	case c.Cluster == "":
		errs = append(errs, c.Errorf("cluster", "cluster: required (the cluster this file configures, as --cluster names it)"))
	case c.Cluster != cluster:
		errs = append(errs, c.Errorf("cluster", "cluster: %q must equal --cluster %q", c.Cluster, cluster))
	}
	if len(c.Teams) == 0 {
		errs = append(errs, c.Errorf("teams", "teams: at least one team (Clearhouse team -> its names in the cluster)"))
	}
	for _, name := range sortedNames(c.Teams) {
		if strings.TrimSpace(name) == "" {
			errs = append(errs, c.Errorf("teams."+name, "teams: a team name must not be empty"))
		}
	}
	if len(c.Pools) == 0 {
		errs = append(errs, c.Errorf("pools", "pools: at least one pool (Clearhouse pool -> the cluster's resource)"))
	}
	for _, name := range sortedNames(c.Pools) {
		path := "pools." + name
		switch kind, ok := strings.CutPrefix(name, c.Cluster+"/"); {
		case strings.TrimSpace(name) == "":
			errs = append(errs, c.Errorf(path, "pools: a pool name must not be empty"))
		case c.Cluster != "" && (!ok || kind == ""):
			errs = append(errs, c.Errorf(path, "pools.%s: not a pool of cluster %s (want %s/KIND)", name, c.Cluster, c.Cluster))
		}
		if c.Pools[name].Unit == "" {
			errs = append(errs, c.Errorf(path, "pools.%s.unit: required (how much of the resource one unit of the pool is, e.g. \"1\" or \"1Gi\")", name))
		}
	}
	return errors.Join(errs...)
}

// parser walks a config's YAML nodes, recording each key's line and collecting errors.
type parser struct {
	c    *Config
	errs []error
}

func (p *parser) errorf(n *yaml.Node, format string, args ...any) {
	p.errs = append(p.errs, &ConfigError{File: p.c.File, Line: n.Line, Rule: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// pairs calls f for each key of a mapping node, refusing a key given twice.
func (p *parser) pairs(n *yaml.Node, path string, f func(key, val *yaml.Node, path string)) {
	if n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a mapping of keys to values", orTop(path))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if first, dup := seen[k.Value]; dup {
			p.errorf(k, "%s: given twice (first at line %d)", join(path, k.Value), first)
			continue
		}
		seen[k.Value] = k.Line
		p.c.lines[join(path, k.Value)] = k.Line
		f(k, v, join(path, k.Value))
	}
}

// mapping reads a mapping with known keys, refusing any other.
func (p *parser) mapping(n *yaml.Node, path string, fields map[string]func(*yaml.Node, string)) {
	p.pairs(n, path, func(k, v *yaml.Node, kpath string) {
		f, ok := fields[k.Value]
		if !ok {
			p.errorf(k, "%s: unknown key (known: %s)", kpath, strings.Join(sortedNames(fields), ", "))
			return
		}
		f(v, kpath)
	})
}

// each reads a mapping whose keys are names (teams, pools).
func (p *parser) each(n *yaml.Node, path string, f func(name string, v *yaml.Node, path string)) {
	p.pairs(n, path, func(k, v *yaml.Node, kpath string) { f(k.Value, v, kpath) })
}

func (p *parser) scalar(n *yaml.Node, path string, dst *string) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errorf(n, "%s: want a single value", path)
		return
	}
	*dst = n.Value
}

func (p *parser) list(n *yaml.Node, path string, dst *[]string) {
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, "%s: want a list such as [a, b]", path)
		return
	}
	for i, e := range n.Content {
		var s string
		p.scalar(e, path+"["+strconv.Itoa(i)+"]", &s)
		*dst = append(*dst, s)
	}
}

func orTop(path string) string {
	if path == "" {
		return "the file"
	}
	return path
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlError turns yaml.v3's "yaml: line N: message" into FILE:N: message.
func yamlError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: file, Line: line, Rule: "not YAML: " + m[2]}
	}
	return &ConfigError{File: file, Line: 1, Rule: "not YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
