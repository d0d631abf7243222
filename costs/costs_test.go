package costs_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/costs"
	"github.com/clearhouse/clearhouse/demo"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// seeded is the demo market on a database of its own, seeded on 4 March 2026 at noon
// through the production wiring, and its charges' reader. It is seeded once for the
// test binary and shared (seeding took about a minute under -race on the shared
// machine, once for each test): only tests that read it may use it, and TestMain
// closes and removes it. Its users' passwords are hashed at bcrypt's minimum cost,
// as the demo's own tests and e2etest do: at the production cost (12) the nine
// logins' hashes were more than half of the package's CPU under -race (74.6 s of
// user+sys before, 31.8 s after), and no test here signs in.
func seeded(t *testing.T) (*exchange.Market, *costs.Reader) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: seeding the whole demo market takes 10 s or more")
	}
	demoOnce.Do(func() { demoMarket, demoReader, demoErr = seed() })
	if demoErr != nil {
		t.Fatal(demoErr)
	}
	return demoMarket, demoReader
}

var (
	demoOnce   sync.Once
	demoMarket *exchange.Market
	demoReader *costs.Reader
	demoErr    error
	demoDB     *store.DB
	demoDir    string
)

func seed() (*exchange.Market, *costs.Reader, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "clearhouse-costs-demo-")
	if err != nil {
		return nil, nil, err
	}
	demoDir = dir
	path := filepath.Join(dir, "demo.db")
	if err := storetest.WriteMigrated(path); err != nil { // a migration of its own cost a second of CPU under -race
		return nil, nil, err
	}
	if demoDB, err = store.Open(ctx, path); err != nil {
		return nil, nil, err
	}
	db := demoDB
	now := storetest.NewClock(time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)).Now
	l := ledger.New(db, now)
	m := exchange.NewMarket(db, l, now)
	rs := fleet.NewReservations(db, l, now, fleet.DefaultPlanConfig)
	m.UseQuotaCommitments(rs)
	m.UseMeasuredUtilization(fleet.NewUtilization(db, now, fleet.DefaultUtilizationConfig))
	be := besteffort.New(db, l, now, besteffort.DefaultConfig)
	s := demo.Services{DB: db, Ledger: l, Market: m, Identity: identity.NewIdentity(db, now, bcrypt.MinCost), BestEffort: be, Now: now,
		AuctionWindow: time.Hour, DBName: "demo.db"}
	if err := demo.Seed(ctx, s, io.Discard); err != nil {
		return nil, nil, err
	}
	return m, costs.NewReader(m, rs, be), nil
}

func TestMain(m *testing.M) {
	code := m.Run()
	if demoDB != nil {
		demoDB.Close()
	}
	if demoDir != "" {
		os.RemoveAll(demoDir)
	}
	os.Exit(code)
}

// The demo's FOCUS file: every column FOCUS 1.0 requires is there with values of
// its type and allowed values; its BilledCost sums to the ledger's net spend for
// the period to the micro-dollar, and each ledger posting's rows sum to it; the
// demo's holding charges are in it, pro rata from the day their rates were set.
func TestDemoFOCUSExportAddsUpToTheLedger(t *testing.T) {
	m, r := seeded(t)
	ctx := context.Background()
	from, to := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)
	lines, err := r.Lines(ctx, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := costs.WriteFOCUS(&buf, lines, costs.FOCUSAccount{}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil || len(recs) < 2 {
		t.Fatalf("%d records, %v", len(recs), err)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	// FOCUS 1.0's mandatory columns, and whether a null is allowed.
	mandatory := map[string]bool{"BilledCost": false, "BillingAccountId": false, "BillingAccountName": true, "BillingCurrency": false,
		"BillingPeriodEnd": false, "BillingPeriodStart": false, "ChargeCategory": false, "ChargeClass": true, "ChargeDescription": true,
		"ChargePeriodEnd": false, "ChargePeriodStart": false, "ContractedCost": false, "EffectiveCost": false, "InvoiceIssuerName": false,
		"ListCost": false, "ProviderName": false, "PublisherName": false, "ServiceCategory": false, "ServiceName": false}
	for c := range mandatory {
		if _, ok := col[c]; !ok {
			t.Errorf("mandatory column %s missing", c)
		}
	}
	decimal := regexp.MustCompile(`^-?\d+\.\d{6}$`)
	datetime := regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$`)
	allowed := map[string][]string{"ChargeCategory": {"Usage", "Purchase", "Tax", "Credit", "Adjustment"}, "ChargeClass": {"", "Correction"},
		"ChargeFrequency": {"One-Time", "Recurring", "Usage-Based"}, "BillingCurrency": {"USD"},
		"ServiceCategory": {"AI and Machine Learning", "Analytics", "Business Applications", "Compute", "Databases", "Developer Tools", "Multicloud",
			"Identity", "Integration", "Internet of Things", "Management and Governance", "Media", "Migration", "Mobile", "Networking",
			"Security", "Storage", "Web", "Other"}}
	var billed ledger.Money
	holding := 0
	for i, rec := range recs[1:] {
		get := func(c string) string { return rec[col[c]] }
		for c, nullable := range mandatory {
			if !nullable && get(c) == "" {
				t.Errorf("row %d: %s is null", i+1, c)
			}
		}
		for _, c := range []string{"BilledCost", "EffectiveCost", "ListCost", "ContractedCost"} {
			if !decimal.MatchString(get(c)) {
				t.Errorf("row %d: %s %q is not a decimal", i+1, c, get(c))
			}
		}
		for _, c := range []string{"BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd"} {
			if !datetime.MatchString(get(c)) {
				t.Errorf("row %d: %s %q is not a FOCUS date/time", i+1, c, get(c))
			}
		}
		for c, vs := range allowed {
			ok := false
			for _, v := range vs {
				ok = ok || get(c) == v
			}
			if !ok {
				t.Errorf("row %d: %s %q is not an allowed value", i+1, c, get(c))
			}
		}
		if get("ChargeCategory") != "Usage" && get("ConsumedQuantity") != "" {
			t.Errorf("row %d: ConsumedQuantity on a %s charge", i+1, get("ChargeCategory"))
		}
		if !(get("ChargePeriodStart") < get("ChargePeriodEnd")) || !(get("BillingPeriodStart") <= get("ChargePeriodStart")) || get("ChargePeriodEnd") > get("BillingPeriodEnd") {
			t.Errorf("row %d: charge period [%s, %s) outside billing period [%s, %s)", i+1, get("ChargePeriodStart"), get("ChargePeriodEnd"),
				get("BillingPeriodStart"), get("BillingPeriodEnd"))
		}
		cost, err := ledger.ParseMoney(get("BilledCost"))
		if err != nil {
			t.Fatal(err)
		}
		billed += cost
		if get("x_ClearhouseKind") == ledger.SpendHolding {
			holding++
			if get("ChargeCategory") != "Purchase" || get("ChargeFrequency") != "Recurring" || get("ResourceId") == "" || get("PricingQuantity") == "" {
				t.Errorf("row %d: a holding charge %v", i+1, rec)
			}
		}
	}
	if holding == 0 {
		t.Fatal("the demo's FOCUS file has no holding charge")
	}

	// The ledger's own figures: net spend per team and month, and each posting.
	months, err := m.Ledger().SpendByMonth(ctx, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	var net ledger.Money
	for _, s := range months {
		net += s.Net()
	}
	if billed != net || net == 0 {
		t.Fatalf("FOCUS BilledCost sums to %s, the ledger's net spend is %s", billed, net)
	}
	charges, err := m.Ledger().TeamCharges(ctx, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	type posting struct {
		team  string
		entry int64
	}
	perEntry := map[posting]ledger.Money{}
	for _, l := range lines {
		perEntry[posting{l.Team, l.EntryID}] += l.Amount
	}
	for _, c := range charges {
		if got := perEntry[posting{c.Team, c.EntryID}]; got != c.Amount {
			t.Errorf("entry %d of %s: its lines sum to %s, the posting is %s", c.EntryID, c.Team, got, c.Amount)
		}
	}
	attributed := 0
	for _, l := range lines {
		if l.PoolID != "" {
			attributed++
		}
	}
	if attributed != len(lines) {
		t.Errorf("%d of %d lines name no pool", len(lines)-attributed, len(lines))
	}
}

// The demo sets holding charges a week before it is made (25 February) and
// charges them as the hourly job would: February for its last 4 days, pro rata,
// and March whole; each is on the team's statement with its pool and days.
func TestDemoCarriesAMonthOfHoldingCharges(t *testing.T) {
	m, _ := seeded(t)
	ctx := context.Background()
	cs, err := m.HoldingCharges(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	months := map[string]int{}
	for _, c := range cs {
		months[c.Month]++
		want, err := exchange.HoldingAmount(c.Units, c.Rate, c.Days, c.MonthDays)
		if c.Whole() {
			want, err = exchange.HoldingAmount(c.Units, c.Rate, 1, 1)
		}
		if err != nil || c.Amount != want || c.Amount <= 0 {
			t.Errorf("charge %+v: want %s", c, want)
		}
		if c.Month == "2026-02" && (c.Days != 4 || c.MonthDays != 28) {
			t.Errorf("February's charge %+v: want 4 of 28 days", c)
		}
		if c.Month == "2026-03" && !c.Whole() {
			t.Errorf("March's charge %+v is not whole", c)
		}
		e, err := m.Ledger().Entry(ctx, c.EntryID)
		if err != nil || !strings.Contains(e.Memo, c.PoolID) {
			t.Errorf("entry of %+v: %+v, %v", c, e, err)
		}
	}
	if months["2026-02"] == 0 || months["2026-03"] == 0 {
		t.Fatalf("holding charges by month %v: want February (pro rata) and March", months)
	}
	if vs, err := m.Verify(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("market verify: %v, %v", vs, err)
	}
	if vs, err := m.Ledger().Verify(ctx); err != nil || len(vs) != 0 {
		t.Fatalf("ledger verify: %v, %v", vs, err)
	}
}
