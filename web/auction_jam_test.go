package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// The Slurm walkthrough (docs/slurm.md) with an auction open: the operator adds a
// cluster and its pool on /operate, a team orders the new pool. The order is
// refused (409) naming the pool and saying it is sold from the next auction on,
// instead of being accepted into an auction that cannot price it (whose close then
// failed for good); the auction closes and settles, and the next one sells the
// new pool.
func TestAPoolAddedDuringAnAuctionIsSoldFromTheNextOne(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.openMarket()
		ctx := context.Background()
		member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
		f.user("op@x.io", identity.RoleOperator, "")
		if code, out := f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":2}],"limit":"5"}`); code != http.StatusCreated {
			t.Fatalf("an order on an old pool: %d %v", code, out)
		}
		op := f.browser()
		op.login("op@x.io")
		tok := op.csrf("/operate")
		if res, _ := op.post("/operate/clusters", url.Values{"csrf_token": {tok}, "id": {"hpc"}, "name": {"HPC"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("adding cluster hpc: %d", res.StatusCode)
		}
		pool := url.Values{"csrf_token": {tok}, "cluster": {"hpc"}, "resource": {"cpu"}, "unit": {"core"}, "capacity": {"64"}, "unit_cost": {"0.02"}, "curve": {"standard"}}
		if res, _ := op.post("/operate/pools", pool); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("adding pool hpc/cpu: %d", res.StatusCode)
		}
		code, out := f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"hpc/cpu":4}],"limit":"5"}`)
		if msg := errorMessage(out); code != http.StatusConflict || !strings.Contains(msg, "hpc/cpu was added after auction #1 opened") || !strings.Contains(msg, "next auction") {
			t.Fatalf("an order on the new pool: %d %q, want 409 naming the pool and the next auction", code, msg)
		}
		code, out = f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":1, "hpc/cpu":4}],"limit":"5"}`)
		if code != http.StatusConflict || !strings.Contains(errorMessage(out), "hpc/cpu") {
			t.Fatalf("an order naming the new pool beside an old one: %d %v", code, out)
		}
		ana, err := f.id.UserByEmail(ctx, "ana@x.io")
		if err != nil {
			t.Fatal(err)
		}
		limit := 5 * ledger.Dollar
		d, err := f.market.SaveDraft(ctx, ana, 0, exchange.OrderSpec{Team: "search", Bundles: []exchange.Bundle{{"hpc/cpu": 4}}, Limit: &limit})
		if err != nil {
			t.Fatalf("a draft on the new pool: %v", err)
		}
		if _, err := f.market.PlaceDraft(ctx, ana, d.ID, nil); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT || !strings.Contains(err.Error(), "next auction") {
			t.Fatalf("placing a draft on the new pool: %v, want 409", err)
		}
		if res, _ := op.post("/operate/auctions/1/close", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("closing: %d", res.StatusCode)
		}
		if a, err := f.market.Auction(ctx, 1); err != nil || a.Status != exchange.AuctionSettled {
			t.Fatalf("auction 1 after the close: %+v %v", a, err)
		}
		if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
			t.Fatal(err)
		}
		if _, err := f.market.OpenDue(ctx); err != nil {
			t.Fatal(err)
		}
		if code, out := f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"hpc/cpu":4}],"limit":"5"}`); code != http.StatusCreated {
			t.Fatalf("the new pool in the next auction: %d %v", code, out)
		}
	})
}

// An auction whose close fails (here: an order naming a pool the auction has no
// price for, as databases jammed before the refusal above hold) is halted, not
// stuck closing: the operator sees why on /operate, teams may withdraw its orders
// (and may not place new ones), the scheduled job leaves it alone, a retry that
// fails again halts it again, and cancelling it releases every hold and lets the
// next auction open. A retry after the offending orders left settles it.
func TestAFailedCloseCanBeRetriedOrCancelled(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		f := newFixtureOn(t, db, web.Config{LoginRate: 5, PublicURL: "http://127.0.0.1"})
		f.openMarket()
		ctx := context.Background()
		member := f.token(f.user("ana@x.io", identity.RoleMember, "search"))
		f.user("op@x.io", identity.RoleOperator, "")
		op := f.browser()
		op.login("op@x.io")
		tok := op.csrf("/operate")
		held := func() ledger.Money {
			t.Helper()
			b, err := f.market.Ledger().Balance(ctx, ledger.TeamAccount("search"))
			if err != nil {
				t.Fatal(err)
			}
			return b.Held
		}
		order := func() int64 {
			t.Helper()
			code, out := f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":2}],"limit":"5"}`)
			if code != http.StatusCreated {
				t.Fatalf("order: %d %v", code, out)
			}
			return int64(out["id"].(float64))
		}
		// jam leaves auction id pricing another pool but not the one its orders name.
		if _, err := f.market.AddPool(ctx, exchange.PoolSpec{ClusterID: "us-east", Resource: "ram", Unit: "GiB", Capacity: 100, UnitCost: ledger.Dollar, CurveID: "standard"}); err != nil {
			t.Fatal(err)
		}
		jam := func(id int64) {
			t.Helper()
			if err := f.db.Write.Exec("INSERT INTO auction_pools (auction_id, pool_id, reserve_price, supply, utilization) VALUES (?, 'us-east/ram', 1, 10, 0) ON CONFLICT DO NOTHING", id).Error; err != nil {
				t.Fatal(err)
			}
			if err := f.db.Write.Exec("DELETE FROM auction_pools WHERE auction_id = ? AND pool_id = 'us-east/cpu'", id).Error; err != nil {
				t.Fatal(err)
			}
		}
		closeVia := func(id int64) (flash string) {
			t.Helper()
			if res, _ := op.post(fmt.Sprintf("/operate/auctions/%d/close", id), url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
				t.Fatalf("closing %d: %d", id, res.StatusCode)
			}
			_, doc := op.get("/operate")
			return doc.Find(".flash").Text() + " " + doc.Find(fmt.Sprintf("[data-testid=auction-%d] [data-testid=close-failure]", id)).Text()
		}
		o1, o2 := order(), order()
		jam(1)
		if page := closeVia(1); !strings.Contains(page, "could not close") || !strings.Contains(page, "unknown pool") || !strings.Contains(page, "cancel") {
			t.Fatalf("/operate after the failed close: %q", page)
		}
		a, _ := f.market.Auction(ctx, 1)
		if a.Status != exchange.AuctionClosing || a.Failure == "" { // halted
			t.Fatalf("auction 1 after its close failed: %s %q, want halted", a.Status, a.Failure)
		}
		if _, err := f.market.Tick(ctx, exchange.Cadence{}); err != nil {
			t.Fatalf("the scheduled job beside a halted auction: %v", err)
		}
		if code, out := f.api(member, "POST", "/api/v1/orders", `{"bundles":[{"us-east/cpu":2}],"limit":"5"}`); code != http.StatusConflict {
			t.Fatalf("a new order in a halted auction: %d %v", code, out)
		}
		before := held()
		if code, out := f.api(member, "POST", fmt.Sprintf("/api/v1/orders/%d/withdraw", o1), ""); code != http.StatusOK && code != http.StatusNoContent {
			t.Fatalf("withdrawing from a halted auction: %d %v", code, out)
		}
		if after := held(); after >= before {
			t.Fatalf("held %d after withdrawing, %d before", after, before)
		}
		if page := closeVia(1); !strings.Contains(page, "could not close") { // o2 still names the unpriced pool
			t.Fatalf("/operate after a retry that failed again: %q", page)
		}
		if res, doc := op.post("/operate/auctions/1/cancel", url.Values{"csrf_token": {tok}}); res.StatusCode != http.StatusOK || !strings.Contains(doc.Find("[data-testid=confirm]").Text(), "holds are released") {
			t.Fatalf("cancelling asks first: %d", res.StatusCode)
		}
		if a, _ := f.market.Auction(ctx, 1); a.Status != exchange.AuctionClosing {
			t.Fatalf("asking changed the auction: %s", a.Status)
		}
		if res, _ := op.post("/operate/auctions/1/cancel", url.Values{"csrf_token": {tok}, "confirm": {"yes"}}); res.StatusCode != http.StatusSeeOther {
			t.Fatalf("cancelling: %d", res.StatusCode)
		}
		a, _ = f.market.Auction(ctx, 1)
		if v, err := f.market.Order(ctx, identity.User{Role: identity.RoleOperator}, o2); err != nil || a.Status != exchange.AuctionFailed || v.Status != exchange.OrderLost || held() != 0 {
			t.Fatalf("after the cancel: auction %s %q, order %d %s (%v), held %d", a.Status, a.Failure, o2, v.Status, err, held())
		}
		if vs, err := f.market.Verify(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("verify after the cancel: %v %v", vs, err)
		}
		if _, err := f.market.Close(ctx, 1); err != nil { // a repeated close answers with the finished auction
			t.Fatalf("closing the cancelled auction again: %v", err)
		}
		// The market moves on: the next auction opens; a retry settles it once the
		// offending order left.
		if _, err := f.market.ScheduleAuction(ctx, f.clock.Now(), f.clock.Now().Add(time.Hour), auction.DefaultParams); err != nil {
			t.Fatal(err)
		}
		if opened, err := f.market.OpenDue(ctx); err != nil || len(opened) != 1 {
			t.Fatalf("the next auction: %v %v", opened, err)
		}
		o3 := order()
		jam(2)
		if page := closeVia(2); !strings.Contains(page, "could not close") {
			t.Fatalf("/operate after auction 2's close failed: %q", page)
		}
		if code, out := f.api(member, "POST", fmt.Sprintf("/api/v1/orders/%d/withdraw", o3), ""); code != http.StatusOK && code != http.StatusNoContent {
			t.Fatalf("withdrawing from auction 2: %d %v", code, out)
		}
		closeVia(2)
		if a, _ := f.market.Auction(ctx, 2); a.Status != exchange.AuctionSettled || held() != 0 {
			t.Fatalf("auction 2 after the retry: %s %q, held %d", a.Status, a.Failure, held())
		}
		if vs, err := f.market.Verify(ctx); err != nil || len(vs) != 0 {
			t.Fatalf("verify at the end: %v %v", vs, err)
		}
	})
}
