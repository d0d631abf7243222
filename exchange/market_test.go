package exchange_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if clearhouse.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// newMarket returns a market with one curve, one cluster and its cpu pool.
func newMarket(t *testing.T, db *store.DB) *exchange.Market {
	t.Helper()
	clock := storetest.NewClock(storetest.Epoch)
	m := exchange.NewMarket(db, ledger.New(db, clock.Now), clock.Now)
	ctx := context.Background()
	if err := db.Write.Exec("INSERT INTO reserve_curves (id, name, spec, updated_at) VALUES ('flat', 'Flat', '{}', CURRENT_TIMESTAMP)").Error; err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddCluster(ctx, exchange.Cluster{ID: "us-east", Name: "US East"}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 100, UnitCost: 1_000_000, Utilization: 0.5, CurveID: "flat"}); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelsMatchSchema(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &exchange.Team{}, &identity.User{}, &identity.Session{},
			&identity.APIToken{}, &exchange.Cluster{}, &exchange.Pool{}, &exchange.Holding{}, &exchange.ReferencePrice{},
			&exchange.HoldingRate{}, &exchange.HoldingCharge{})
	})
}

func TestTeams(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		m, ctx := newMarket(t, db), context.Background()
		if _, err := m.AddTeam(ctx, exchange.NewTeam{ID: "search", Name: "Search"}); err != nil {
			t.Fatal(err)
		}
		_, err := m.AddTeam(ctx, exchange.NewTeam{ID: "search"})
		wantCode(t, err, clearhouse.ECONFLICT)
		_, err = m.AddTeam(ctx, exchange.NewTeam{ID: "Bad Id"})
		wantCode(t, err, clearhouse.EINVALID)
		_, err = m.Team(ctx, "ghost")
		wantCode(t, err, clearhouse.ENOTFOUND)
		wantCode(t, m.SetApprovalThreshold(ctx, "ghost", 5), clearhouse.ENOTFOUND)
		if err := m.SetApprovalThreshold(ctx, "search", 5_000_000); err != nil {
			t.Fatal(err)
		}
		got, err := m.Team(ctx, "search")
		if err != nil || got.Name != "Search" || got.ApprovalThreshold != 5_000_000 || !got.CreatedAt.Equal(storetest.Epoch) {
			t.Fatalf("Team = %+v, %v", got, err)
		}
	})
}

func TestPoolsAndQuota(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		m, ctx := newMarket(t, db), context.Background()
		_, err := m.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "cpu", Unit: "core", Capacity: 1, CurveID: "flat"})
		wantCode(t, err, clearhouse.ECONFLICT)
		_, err = m.AddPool(ctx, exchange.PoolSpec{ClusterID: "nowhere", Resource: "cpu", Unit: "core", Capacity: 1, CurveID: "flat"})
		wantCode(t, err, clearhouse.ENOTFOUND)
		_, err = m.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 1, Utilization: 1.5, CurveID: "flat"})
		wantCode(t, err, clearhouse.EINVALID)
		if _, err := m.AddTeam(ctx, exchange.NewTeam{ID: "ads"}); err != nil {
			t.Fatal(err)
		}
		if err := m.GrantQuota(ctx, "ads", "us-east/cpu", 60); err != nil {
			t.Fatal(err)
		}
		wantCode(t, m.GrantQuota(ctx, "ads", "us-east/cpu", 41), clearhouse.ECONFLICT)
		if err := m.GrantQuota(ctx, "ads", "us-east/cpu", 40); err != nil {
			t.Fatal(err)
		}
		hs, err := m.Holdings(ctx, "ads")
		if err != nil || len(hs) != 1 || hs[0].Quantity != 100 {
			t.Fatalf("Holdings = %+v, %v", hs, err)
		}
		_, err = m.UpdatePool(ctx, "us-east/cpu", exchange.PoolSpec{Unit: "core", Capacity: 99, CurveID: "flat"})
		wantCode(t, err, clearhouse.ECONFLICT)
		p, err := m.UpdatePool(ctx, "us-east/cpu", exchange.PoolSpec{Unit: "core", Capacity: 150, UnitCost: 2, Utilization: 0.9, CurveID: "flat"})
		if err != nil || p.Capacity != 150 || p.Utilization != 0.9 {
			t.Fatalf("UpdatePool = %+v, %v", p, err)
		}
	})
}
