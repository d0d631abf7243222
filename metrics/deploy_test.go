package metrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/metrics"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gopkg.in/yaml.v3"
)

// metricName finds the series names an expression uses.
var metricName = regexp.MustCompile(`\b(?:clearhouse|go_sql)_[a-z_]+\b`)

// known is every family the registry serves, with a histogram's _bucket, _count
// and _sum.
func known(t *testing.T) map[string]bool {
	m := metrics.New(storetest.New(t), "test", time.Now)
	out := map[string]bool{}
	for _, n := range m.Names() {
		for _, suffix := range []string{"", "_bucket", "_count", "_sum"} {
			out[n+suffix] = true
		}
	}
	return out
}

func checkNames(t *testing.T, file, text string, have map[string]bool) {
	t.Helper()
	used := metricName.FindAllString(text, -1)
	if len(used) == 0 {
		t.Fatalf("%s uses no Clearhouse series", file)
	}
	for _, n := range used {
		if !have[n] && !strings.HasSuffix(n, "_") {
			t.Errorf("%s uses %s, which Clearhouse does not serve", file, n)
		}
	}
}

// The Grafana dashboard is JSON whose panels each query series Clearhouse serves.
func TestDeployDashboardQueriesServedSeries(t *testing.T) {
	t.Parallel()
	const file = "../deploy/grafana/clearhouse-dashboard.json"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	have := known(t)
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkNames(t, file+": "+p.Title, q.Expr, have)
		}
	}
}

// The alert rules query only series Clearhouse serves (promtool checks their
// syntax and their unit tests in make check-deploy).
func TestDeployAlertRulesQueryServedSeries(t *testing.T) {
	t.Parallel()
	const file = "../deploy/prometheus/clearhouse-alerts.yml"
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, "clearhouse_") && !strings.Contains(line, "summary:") && !strings.Contains(line, "runbook:") {
			exprs = append(exprs, line)
		}
	}
	checkNames(t, file, strings.Join(exprs, "\n"), known(t))
	for _, want := range []string{"ClearhouseAuctionNotClosedOnSchedule", "ClearhouseAgentSilent", "ClearhouseJobFailing", "ClearhouseVerifyNotClean", "ClearhouseCapacityOversold"} {
		if !strings.Contains(string(b), "alert: "+want) {
			t.Errorf("no alert %s", want)
		}
	}
	if names := known(t); !names["go_sql_in_use_connections"] || !slices.ContainsFunc(keys(names), func(s string) bool { return strings.HasPrefix(s, "clearhouse_http_") }) {
		t.Error("the registry lacks the database pool or HTTP series")
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// scrapeJob is what the tests read of one of prometheus.yml's scrape_configs.
type scrapeJob struct {
	JobName string `yaml:"job_name"`
	DNS     []struct {
		Names []string
		Port  int
	} `yaml:"dns_sd_configs"`
}

// The scrape configuration shipped beside the rules names the job the rules select
// (up{job="..."}), loads the rules file, and finds the server pods through the
// headless Service and metrics port of deploy/kubernetes/server.yaml (promtool checks
// its syntax in make check-deploy).
func TestDeployScrapeConfigMatchesTheAlertsAndTheServer(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../deploy/prometheus/prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		RuleFiles     []string    `yaml:"rule_files"`
		ScrapeConfigs []scrapeJob `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	rules, err := os.ReadFile("../deploy/prometheus/clearhouse-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	jobs := regexp.MustCompile(`\bjob="([^"]+)"`).FindAllStringSubmatch(string(rules), -1)
	if len(jobs) == 0 {
		t.Fatal("the alerts select no job")
	}
	if !slices.Contains(cfg.RuleFiles, "clearhouse-alerts.yml") {
		t.Errorf("rule_files %v does not load clearhouse-alerts.yml", cfg.RuleFiles)
	}
	server, err := os.ReadFile("../deploy/kubernetes/server.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		i := slices.IndexFunc(cfg.ScrapeConfigs, func(s scrapeJob) bool { return s.JobName == j[1] })
		if i < 0 {
			t.Fatalf("no scrape job %q, which the alerts select", j[1])
		}
		sc := cfg.ScrapeConfigs[i]
		if len(sc.DNS) != 1 || len(sc.DNS[0].Names) != 1 {
			t.Fatalf("scrape job %q: want one DNS name, have %+v", j[1], sc.DNS)
		}
		svc, _, _ := strings.Cut(sc.DNS[0].Names[0], ".")
		for _, want := range []string{"name: " + svc + "\n", "clusterIP: None", fmt.Sprintf("{name: metrics, containerPort: %d}", sc.DNS[0].Port),
			fmt.Sprintf(`{name: CLEARHOUSE_METRICS_ADDR, value: "0.0.0.0:%d"}`, sc.DNS[0].Port)} {
			if !strings.Contains(string(server), want) {
				t.Errorf("deploy/kubernetes/server.yaml lacks %q, which the scrape job %q needs", want, j[1])
			}
		}
	}
}
