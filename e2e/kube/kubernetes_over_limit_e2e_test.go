package kube

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent/kubernetes"
	"github.com/clearhouse/clearhouse/agent/kubernetes/kubetest"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A sale below running usage (issue 37), on the real control plane and the real
// agent: search holds 8 cores and runs two 4-core pods, then sells 4 cores to ads
// at a settled auction (the pool's capacity overridden to the 8 held, so only
// search's offer can fill ads's bid). Its limit falls to 4 below the 8 it runs: the
// agent reports it over its limit, the server records it, the team page warns and
// /operate lists it. Under the default policy (report) nothing is stopped; once
// operators set evict with a 1-minute grace, nothing is stopped within the grace,
// and after it (the market's clock moved on) the agent evicts search's newest pod
// only, the excess clears, what was taken back is recorded (and listed on
// /operate), and the team is told both.
func TestKubernetesASaleBelowRunningUsageIsReportedThenEvicted(t *testing.T) {
	m := newAgentMarket(t)
	ctx := context.Background()
	if _, err := m.App.Market.AddTeam(ctx, exchange.NewTeam{ID: "ads", Budget: 1000 * ledger.Dollar}); err != nil {
		t.Fatal(err)
	}
	buyer, err := m.App.Identity.AddUser(ctx, identity.NewUser{Email: "member@ads.io", Role: identity.RoleMember, TeamID: "ads"})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubetest.Client(t)
	adsNS := kubetest.Namespace(t, cs)
	k := newKubeAgentWith(t, m, map[string]string{"ads": adsNS})
	m.Clock.Set(time.Now().UTC())
	if err := m.App.Market.GrantQuota(ctx, "search", "us-east/cpu", 8); err != nil {
		t.Fatal(err)
	}
	k.poll()
	if err := m.App.Market.OverrideCapacity(ctx, "us-east/cpu", 8, "only search's offer may fill a bid", m.Clock.Now().Add(24*time.Hour), "op@x.io"); err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForQuotaAdmission(t, cs, k.ns, cpuPod("probe", "9"))

	// Two pods of 4 cores, the second created in a later second than the first (the
	// API server stamps creation to the second) and named so that a tie would pick
	// the older one: the newest is told by its creation time.
	old, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("z-old", "4"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kubetest.WaitForPodPhase(t, cs, k.ns, "z-old", corev1.PodRunning)
	kubetest.Eventually(t, "a second after the first pod's creation", func() (bool, error) {
		return time.Now().Truncate(time.Second).After(old.CreationTimestamp.Time), nil
	})
	if _, err := cs.CoreV1().Pods(k.ns).Create(ctx, cpuPod("a-new", "4"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("the second 4-core pod within search's 8: %v", err)
	}
	kubetest.WaitForPodPhase(t, cs, k.ns, "a-new", corev1.PodRunning)
	k.poll()
	if over, err := m.App.Plan.OverLimits(ctx, "search"); err != nil || len(over) != 0 {
		t.Fatalf("over limits using 8 of 8: %+v %v", over, err)
	}

	// search sells 4 of its 8 cores to ads.
	a, err := m.App.Market.ScheduleAuction(ctx, m.Clock.Now(), m.Clock.Now().Add(time.Hour), auction.DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.OpenDue(ctx); err != nil {
		t.Fatal(err)
	}
	ask, bid := -1*ledger.Dollar, 500*ledger.Dollar
	if _, err := m.App.Market.PlaceOrder(ctx, m.Member, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"us-east/cpu": -4}}, Limit: &ask}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.PlaceOrder(ctx, buyer, exchange.OrderSpec{Team: "ads", Bundles: []exchange.Bundle{{"us-east/cpu": 4}}, Limit: &bid}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.App.Market.Close(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	hs, err := m.App.Market.Holdings(ctx, "search")
	if err != nil || len(hs) != 1 || hs[0].Quantity != 4 {
		t.Fatalf("search's holdings after selling 4 of 8: %+v %v", hs, err)
	}

	k.poll()
	q, err := cs.CoreV1().ResourceQuotas(k.ns).Get(ctx, kubernetes.QuotaName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := q.Spec.Hard[corev1.ResourceRequestsCPU]; h.String() != "4" {
		t.Fatalf("search's quota after the sale: %s, want 4", h.String())
	}
	over, err := m.App.Plan.OverLimits(ctx, "search")
	if err != nil || len(over) != 1 || over[0].Used != 8 || over[0].Limit != 4 || over[0].Pool != "us-east/cpu" {
		t.Fatalf("over limits after the sale %+v %v, want search using 8 of its 4", over, err)
	}
	tok, _, err := m.App.Identity.IssueToken(ctx, m.Member.ID, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	warning := func() string {
		return strings.Join(strings.Fields(m.page(tok, "/team").Find(`[data-testid="over-limit-us-east/cpu"]`).Text()), " ")
	}
	if w := warning(); !strings.Contains(w, "uses 8 cores of us-east/cpu, 4 cores above its limit of 4 cores") || !strings.Contains(w, "Reported only") {
		t.Fatalf("search's team page warns %q; want its 8 cores, 4 above its limit of 4, reported only", w)
	}
	op, err := m.App.Identity.AddUser(ctx, identity.NewUser{Email: "op@x.io", Role: identity.RoleOperator})
	if err != nil {
		t.Fatal(err)
	}
	opTok, _, err := m.App.Identity.IssueToken(ctx, op.ID, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	operate := m.page(opTok, "/operate")
	if got := operate.Find(`[data-testid="over-limit-search-us-east/cpu"] [data-testid=over-limit-excess]`).Text(); got != "4 cores" {
		t.Fatalf("/operate shows search's excess as %q, want 4 cores", got)
	}
	running := func(name string) bool {
		t.Helper()
		p, err := cs.CoreV1().Pods(k.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
	}
	k.poll()
	if !running("a-new") || !running("z-old") {
		t.Fatal("a pod stopped under the report-only policy")
	}

	if err := m.App.Plan.SetOverLimitPolicy(ctx, fleet.OverLimitPolicy{Action: fleet.OverLimitEvict, Grace: time.Minute}); err != nil {
		t.Fatal(err)
	}
	k.poll()
	if !running("a-new") || !running("z-old") {
		t.Fatal("a pod evicted within the grace")
	}
	if w := warning(); !strings.Contains(w, "will be stopped (pods evicted, jobs requeued) from") {
		t.Fatalf("search's team page under the evict policy, within the grace: %q", w)
	}
	m.Clock.Advance(2 * time.Minute)
	kubetest.Eventually(t, "the excess taken back and cleared", func() (bool, error) {
		k.poll()
		over, err := m.App.Plan.OverLimits(ctx, "search")
		return len(over) == 0, err
	})
	if running("a-new") || !running("z-old") {
		t.Fatalf("after the grace: a-new running %v, z-old running %v; want the newest evicted, the older left", running("a-new"), running("z-old"))
	}
	rec, err := m.App.Plan.RecentlyReclaimed(ctx, "search", 5)
	if err != nil || len(rec) != 1 || rec[0].Units != 4 || rec[0].Object != "Pod "+k.ns+"/a-new" {
		t.Fatalf("recorded reclaims %+v %v, want Pod %s/a-new of 4 cores", rec, err, k.ns)
	}
	ns, err := m.App.Market.Notices().Notifications(ctx, m.Member.ID, 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, n := range ns {
		kinds = append(kinds, n.Kind)
	}
	if !slices.Contains(kinds, fleet.NoticeOverLimit) || !slices.Contains(kinds, fleet.NoticeReclaimed) {
		t.Fatalf("search was told %v, want it over its limit and what was taken back", kinds)
	}
	if w := warning(); w != "" {
		t.Fatalf("search's team page still warns %q", w)
	}
	operate = m.page(opTok, "/operate")
	if operate.Find(`[data-testid="over-limit-search-us-east/cpu"]`).Length() != 0 || !strings.Contains(operate.Find("[data-testid=reclaimed]").Text(), "Pod "+k.ns+"/a-new of team search") {
		t.Fatalf("/operate after the eviction: %q", strings.Join(strings.Fields(operate.Find("[data-testid=reclaimed]").Text()), " "))
	}
	k.poll()
	if rec, _ := m.App.Plan.RecentlyReclaimed(ctx, "search", 5); len(rec) != 1 || !running("z-old") {
		t.Fatalf("more taken back once within the limit: %+v", rec)
	}
}
