package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// services wires the application's services on db as `serve` does.
func services(db *store.DB, now func() time.Time) Services {
	l := ledger.New(db, now)
	m := exchange.NewMarket(db, l, now)
	m.UseQuotaCommitments(fleet.NewReservations(db, l, now, fleet.DefaultPlanConfig))
	m.UseMeasuredUtilization(fleet.NewUtilization(db, now, fleet.DefaultUtilizationConfig))
	return Services{DB: db, Ledger: l, Market: m, Identity: identity.NewIdentity(db, now, bcrypt.MinCost),
		BestEffort: besteffort.New(db, l, now, besteffort.DefaultConfig), Now: now, AuctionWindow: time.Hour, DBName: "demo.db"}
}

var seedTime = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

func TestSeedFillsAnEmptyDatabaseOnceAndPrintsTheLogins(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: seeding the whole demo market takes 10 s or more")
	}
	ctx := context.Background()
	s := services(storetest.New(t), storetest.NewClock(seedTime).Now)
	var out bytes.Buffer
	if err := Seed(ctx, s, &out); err != nil {
		t.Fatal(err)
	}
	teams, err := s.Market.Teams(ctx)
	if err != nil || len(teams) != 12 {
		t.Fatalf("%d teams (%v), want 12", len(teams), err)
	}
	pools, err := s.Market.Pools(ctx)
	if err != nil || len(pools) != 12 {
		t.Fatalf("%d pools (%v), want 12", len(pools), err)
	}
	au, ok, err := s.Market.CurrentAuction(ctx)
	if err != nil || !ok || au.Status != exchange.AuctionOpen {
		t.Fatalf("no open auction after the seed: %+v %v %v", au, ok, err)
	}
	history, err := s.Market.Auctions(ctx, 0)
	if err != nil || len(history) != 8 {
		t.Fatalf("%d auctions (%v), want a week of closed ones and the open one", len(history), err)
	}
	for _, l := range Logins() {
		if !strings.Contains(out.String(), l.Email) {
			t.Errorf("the seed's output lacks the login %s:\n%s", l.Email, out.String())
		}
	}
	out.Reset()
	if err := Seed(ctx, s, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "already has a market") || !strings.Contains(out.String(), "--db demo.db --email operator@example.com") {
		t.Fatalf("a second seed does not say it left the market alone and how to sign in:\n%s", out.String())
	}
	if again, _ := s.Market.Teams(ctx); len(again) != 12 {
		t.Fatalf("a second seed changed the teams: %d", len(again))
	}
}

// BenchmarkSeed measures the whole demo seed on a fresh migrated SQLite database
// in a temporary directory (the migration is not timed).
func BenchmarkSeed(b *testing.B) {
	ctx := context.Background()
	for b.Loop() {
		b.StopTimer()
		s := services(storetest.New(b), storetest.NewClock(seedTime).Now)
		b.StartTimer()
		if err := Seed(ctx, s, &bytes.Buffer{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/seed")
}
