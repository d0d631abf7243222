package clearhouse_test

import (
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// module is the module path every package of the repository lives under.
const module = "github.com/clearhouse/clearhouse"

// depRule is where one package stands in the import graph: the packages it must not
// depend on, directly or through another package.
type depRule struct {
	// deny lists what the package must not depend on. An entry is a package of the
	// module relative to its root ("exchange" covers exchange/... too), "*" for every
	// package of the module (the root package included), or an import path outside the
	// module ("gorm.io" covers gorm.io/...).
	deny []string
	// allow lists packages of the module a "*" in deny leaves reachable.
	allow []string
}

// Groups the rules are written from (DESIGN.md, "Shape of the code").
var (
	// frameworks are what an engine or a template never sees: the database mapper,
	// the HTTP router and, for the engines, the template engine.
	frameworks = []string{"gorm.io", "github.com/gin-gonic", "github.com/a-h/templ"}
	// above lists the packages above a domain service: the HTTP layer, the pages, the
	// server's wiring, the binary, the demo seed, the cluster agent, which speaks only
	// the JSON API, and the end-to-end tests.
	above = []string{"web", "templates", "server", "cmd", "demo", "agent", "e2e"}
	// server lists every package the server is made of, below the binary.
	server = []string{"audit", "store", "ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "costs", "metrics", "demo", "web", "templates", "static", "migrations", "server", "cmd", "e2e"}
)

func join(groups ...[]string) []string {
	var all []string
	for _, g := range groups {
		all = append(all, g...)
	}
	return all
}

// engine is the rule of the pure engines: value types in, value types out, no
// framework and no package of the server, so they are tested, benchmarked and
// simulated alone.
var engine = depRule{deny: join(frameworks, server)}

// kubernetesModules are the Kubernetes client's and its APIs' import paths, which the
// server's binary must not carry.
var kubernetesModules = []string{"k8s.io", "sigs.k8s.io"}

// agentRule: the cluster agent and its backends import only the agent's own packages
// and the JSON API's contract (api/v1), which the server encodes from the same types;
// they speak the JSON API as any other agent would.
var agentRule = depRule{deny: []string{"*"}, allow: []string{"agent", "api/v1"}}

// leaf: a package that imports nothing of the module.
var leaf = depRule{deny: []string{"*"}}

// depRules holds a rule for every package of the module, by path relative to the
// module's root ("" is the root package). A rule for a package that does not exist is
// harmless; a package without a rule fails TestDependenciesPointOneWay.
var depRules = map[string]depRule{
	// The root package: the domain error codes and the CSV writer every package shares.
	"": leaf,

	// The JSON API's contract: the bodies web encodes and decodes and the agent reads
	// and sends. Only the standard library, so that the agent carries nothing of the
	// server.
	"api/v1": leaf,

	// Leaves: formatting, embedded files.
	"moneyfmt":   leaf,
	"migrations": leaf,
	"static":     leaf,

	// Test support: whether a test binary runs under the race detector; the
	// process's CPU time, for benchmarks.
	"internal/racetest": leaf,
	"internal/cputime":  leaf,
	// The test command's wrapper (make test): the standard library only.
	"internal/testtimeline": leaf,

	// The engines.
	"auction":        engine,
	"scheduler":      engine,
	"sharing":        engine,
	"sharing/abacus": engine,

	// Storage and money: store -> migrations; ledger -> store.
	"store":           {deny: join([]string{"audit", "ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"store/storetest": {deny: join([]string{"audit", "ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	// The audit trail: rows the services write in their own transactions; it knows
	// nothing of the market or of identity, so every service may record.
	"audit":           {deny: join([]string{"ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"audit/audittest": {deny: join([]string{"ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"ledger":          {deny: join([]string{"mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},

	// Sending e-mail knows nothing of the market.
	"mailer":            {deny: join([]string{"audit", "store", "ledger", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"mailer/mailertest": {deny: join([]string{"store", "ledger", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},

	// Identity (people, passwords, sessions, tokens) sits below the market: any
	// service may ask who someone is, and identity asks none of them.
	"identity":              {deny: join([]string{"notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"identity/identitytest": {deny: join([]string{"notify", "exchange", "fleet", "besteffort", "metrics"}, above)},
	"identity/oidctest":     {deny: join([]string{"store", "ledger", "identity", "notify", "exchange", "fleet", "besteffort", "metrics"}, above)},

	// Notifications and the e-mail outbox: messages stored for users, sent by the
	// mailer job. The market decides what they say and writes them in its own
	// transactions; notify knows users by identity, nothing of the market.
	"notify": {deny: join([]string{"exchange", "fleet", "besteffort", "metrics"}, above)},

	// The market.
	"exchange":              {deny: join([]string{"fleet", "besteffort", "metrics"}, above)},
	"exchange/exchangetest": {deny: join([]string{"fleet", "besteffort", "metrics"}, above)},

	// The cluster-facing services, built on the market, side by side. Best-effort
	// jobs read the reservation plan, so besteffort may import fleet, never the
	// other way.
	"fleet":           {deny: join([]string{"besteffort", "metrics"}, above)},
	"fleet/fleettest": {deny: join([]string{"besteffort", "metrics"}, above)},
	"besteffort":      {deny: join([]string{"metrics"}, above)},
	// costs reads what every kind of charge was for: above besteffort and fleet.
	"costs": {deny: join([]string{"metrics"}, above)},

	// Instrumentation reads the services; only the web layer and the binary use it.
	"metrics": {deny: above},

	// The demo seed fills a database through the services, as a user would; its
	// owners' usage follows the simulated agent's daily wave (agent/simulate).
	"demo": {deny: []string{"web", "templates", "server", "cmd", "metrics", "e2e"}},

	// Pages take view models built in web: no database row reaches a template.
	"templates": {deny: join([]string{"gorm.io", "github.com/gin-gonic"}, []string{"store", "ledger", "mailer", "identity", "exchange", "fleet", "besteffort", "metrics", "demo", "web", "server", "cmd", "agent"})},

	// The HTML reports of `share simulate` and `simulate`: the pages' chart components
	// over view models the commands build.
	"templates/reports": {deny: join([]string{"gorm.io", "github.com/gin-gonic"}, []string{"store", "ledger", "mailer", "identity", "exchange", "fleet", "besteffort", "metrics", "demo", "web", "server", "cmd", "agent"})},

	// The research tools (lab.go in cmd/clearhouse mounts their commands): experiments
	// over the engines, their tables, JSON and reports, importable and benchmarked
	// alone; nothing of the server, the database or the agent, and the library no
	// command-line package (lab/labcmd is its command line).
	"lab":        {deny: join([]string{"gorm.io", "github.com/gin-gonic", "github.com/spf13"}, []string{"store", "ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics", "demo", "web", "server", "cmd", "agent", "lab/labcmd"})},
	"lab/labcmd": {deny: join([]string{"gorm.io", "github.com/gin-gonic"}, []string{"store", "ledger", "mailer", "identity", "notify", "exchange", "fleet", "besteffort", "metrics", "demo", "web", "server", "cmd", "agent"})},

	// HTTP: routes, handlers, auth, the JSON API.
	"web": {deny: []string{"server", "cmd", "demo", "agent", "e2e"}},

	// The server's wiring: the services, the web server and the scheduled jobs of
	// `clearhouse serve` (App), importable so that the end-to-end tests run the
	// production wiring; no command line and, like the binary, no Kubernetes package
	// (the demo it seeds imports agent/simulate).
	"server": {deny: join([]string{"cmd", "e2e"}, kubernetesModules)},

	// The end-to-end tests (browser, clusters, crash and replicas; docs/testing.md) and
	// what they share: they drive the server's wiring, the agent and the built binary,
	// never the binary's package.
	"e2e/e2etest": {deny: []string{"cmd"}},
	"e2e/browser": {deny: []string{"cmd"}},
	"e2e/kube":    {deny: []string{"cmd"}},
	"e2e/slurm":   {deny: []string{"cmd"}},
	"e2e/ops":     {deny: []string{"cmd"}},

	// The server's binary wires everything but the Kubernetes client: the kubernetes
	// backend (its client and Kueue's API, some 450 packages) lives in clearhouse-agent,
	// so the server stays small and quick to build and start (docs/benchmarks.md).
	"cmd/clearhouse": {deny: kubernetesModules},

	// The agent's own binary: the agent's command and every backend, nothing of the
	// server.
	"cmd/clearhouse-agent": agentRule,

	// The cluster agent and its backends.
	"agent":                     agentRule,
	"agent/agentcmd":            agentRule,
	"agent/simulate":            agentRule,
	"agent/kubernetes":          agentRule,
	"agent/kubernetes/kubetest": agentRule,
	"agent/slurm":               agentRule,
	"agent/slurm/slurmtest":     agentRule,
	"deploy/kubernetes":         agentRule, // only tests: the manifests against an API server
}

// matches reports whether dep (relative to the module, or an outside import path when
// inModule is false) is covered by entry.
func matches(entry, dep string, inModule bool) bool {
	if entry == "*" {
		return inModule
	}
	if inModule != !strings.Contains(strings.SplitN(entry, "/", 2)[0], ".") {
		return false
	}
	return dep == entry || strings.HasPrefix(dep, entry+"/")
}

// violations lists the dependencies of pkg (relative to the module) that rule denies.
func violations(pkg string, deps []string, rule depRule) []string {
	var bad []string
	for _, dep := range deps {
		rel, inModule := dep, false
		if dep == module {
			rel, inModule = "", true
		} else if strings.HasPrefix(dep, module+"/") {
			rel, inModule = strings.TrimPrefix(dep, module+"/"), true
		}
		if inModule && rel == pkg {
			continue
		}
		denied := false
		for _, d := range rule.deny {
			if matches(d, rel, inModule) {
				denied = true
				break
			}
		}
		for _, a := range rule.allow {
			if inModule && matches(a, rel, true) {
				denied = false
			}
		}
		if denied {
			bad = append(bad, dep)
		}
	}
	return bad
}

// Dependencies point one way (DESIGN.md, "Shape of the code"): web -> besteffort ->
// fleet -> exchange -> ledger -> store, any of them -> the engines and identity;
// the engines import no framework and no server package; the agent imports none of
// the server. Every package of the module must have a rule in depRules, so a new
// package is placed on purpose.
func TestDependenciesPointOneWay(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Deps " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 20 {
		t.Fatalf("go list ./... listed %d packages; want every package of the module", len(lines))
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		rule, ok := depRules[pkg]
		if !ok {
			t.Errorf("package %s has no rule in depRules (deps_test.go): add a rule for it, saying what it must not import", fields[0])
			continue
		}
		for _, dep := range violations(pkg, fields[1:], rule) {
			t.Errorf("%s depends on %s", fields[0], dep)
		}
	}
}

// The rules' matching itself, on made-up dependency lists, so a mistake in it cannot
// make the test above pass vacuously.
func TestDependencyRulesMatch(t *testing.T) {
	cases := []struct {
		pkg  string
		deps []string
		rule depRule
		want []string
	}{
		{"auction", []string{"sort", module, "gorm.io/gorm", module + "/store"}, engine, []string{"gorm.io/gorm", module + "/store"}},
		{"auction", []string{"github.com/a-h/templ/runtime", module + "/moneyfmt"}, engine, []string{"github.com/a-h/templ/runtime"}},
		{"agent/slurm", []string{module + "/agent", module + "/agent/slurm", module}, agentRule, []string{module}},
		{"agent", []string{module + "/agentx"}, agentRule, []string{module + "/agentx"}},
		{"agent/kubernetes", []string{module + "/api/v1", module + "/api", module + "/web"}, agentRule, []string{module + "/api", module + "/web"}},
		{"", []string{module, module + "/moneyfmt"}, leaf, []string{module + "/moneyfmt"}},
		{"exchange", []string{module + "/exchangex", module + "/fleet/plan", module + "/ledger"}, depRules["exchange"], []string{module + "/fleet/plan"}},
		{"identity", []string{module + "/exchange", module + "/store"}, depRules["identity"], []string{module + "/exchange"}},
		{"fleet", []string{module + "/besteffort", module + "/exchange"}, depRules["fleet"], []string{module + "/besteffort"}},
		{"besteffort", []string{module + "/fleet", module + "/web"}, depRules["besteffort"], []string{module + "/web"}},
		{"templates", []string{"gorm.io/gorm", module + "/moneyfmt"}, depRules["templates"], []string{"gorm.io/gorm"}},
		{"lab", []string{module + "/sharing", module + "/templates/reports", "github.com/spf13/cobra", module + "/store", module + "/lab/labcmd"}, depRules["lab"],
			[]string{"github.com/spf13/cobra", module + "/store", module + "/lab/labcmd"}},
		{"lab/labcmd", []string{module + "/lab", "github.com/spf13/cobra", module + "/besteffort", module + "/cmd/clearhouse"}, depRules["lab/labcmd"],
			[]string{module + "/besteffort", module + "/cmd/clearhouse"}},
		{"cmd/clearhouse", []string{"k8s.io/client-go/kubernetes", "sigs.k8s.io/kueue/apis", "github.com/spf13/cobra", module + "/agent/slurm", "k8s.io"}, depRules["cmd/clearhouse"],
			[]string{"k8s.io/client-go/kubernetes", "sigs.k8s.io/kueue/apis", "k8s.io"}},
	}
	for _, c := range cases {
		got := violations(c.pkg, c.deps, c.rule)
		sort.Strings(got)
		sort.Strings(c.want)
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("violations(%q, %v) = %v, want %v", c.pkg, c.deps, got, c.want)
		}
	}
}

// The server's binary carries no Kubernetes package (its rule in depRules), and the
// rule names the paths the kubernetes backend really pulls: clearhouse-agent, which
// carries that backend, depends on packages under each of them.
func TestTheServerLeavesTheKubernetesClientToTheAgent(t *testing.T) {
	for _, c := range []struct {
		pkg  string
		want bool
	}{{"./cmd/clearhouse", false}, {"./cmd/clearhouse-agent", true}} {
		out, err := exec.Command("go", "list", "-deps", c.pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", c.pkg, err)
		}
		deps := strings.Fields(string(out))
		for _, prefix := range kubernetesModules {
			var found []string
			for _, dep := range deps {
				if matches(prefix, dep, false) {
					found = append(found, dep)
				}
			}
			if (len(found) > 0) != c.want {
				t.Errorf("go list -deps %s: %d packages under %s/ (%.200v), want some: %v", c.pkg, len(found), prefix, found, c.want)
			}
		}
	}
}
