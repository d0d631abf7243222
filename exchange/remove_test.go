package exchange_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// A pool or cluster nothing depends on can be removed; otherwise removal is refused
// with the reason, and nothing changes.
func TestRemovePoolsAndClusters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		m, ctx := newMarket(t, db), context.Background()
		if _, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 10, UnitCost: 1, Utilization: 0.5, CurveID: "flat"}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.AddTeam(ctx, exchange.NewTeam{ID: "search"}); err != nil {
			t.Fatal(err)
		}
		if err := m.GrantQuota(ctx, "search", "us-east/cpu", 5); err != nil {
			t.Fatal(err)
		}
		err := m.RemovePool(ctx, "us-east/cpu")
		wantCode(t, err, clearhouse.ECONFLICT)
		if !strings.Contains(clearhouse.ErrorMessage(err), "teams hold quota in it") {
			t.Errorf("refusal does not say why: %v", err)
		}
		err = m.RemoveCluster(ctx, "us-east")
		wantCode(t, err, clearhouse.ECONFLICT)
		if !strings.Contains(clearhouse.ErrorMessage(err), "us-east/cpu, us-east/ram") {
			t.Errorf("refusal does not name the pools: %v", err)
		}
		wantCode(t, m.RemovePool(ctx, "us-east/gpu"), clearhouse.ENOTFOUND)
		wantCode(t, m.RemoveCluster(ctx, "nowhere"), clearhouse.ENOTFOUND)
		if err := m.RemovePool(ctx, "us-east/ram"); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Pool(ctx, "us-east/ram"); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Fatalf("removed pool still there: %v", err)
		}
		if _, err := m.Pool(ctx, "us-east/cpu"); err != nil {
			t.Fatalf("refused removal changed the pool: %v", err)
		}
		if _, err := m.AddCluster(ctx, exchange.Cluster{ID: "eu-west"}); err != nil {
			t.Fatal(err)
		}
		if err := m.RemoveCluster(ctx, "eu-west"); err != nil {
			t.Fatal(err)
		}
		cs, err := m.Clusters(ctx)
		if err != nil || len(cs) != 1 || cs[0].ID != "us-east" {
			t.Fatalf("clusters after removal: %v %v", cs, err)
		}
	})
}
