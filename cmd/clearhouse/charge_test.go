package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/auction"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// `clearhouse charge holding --month` charges a month once: a second run makes no
// charge, a malformed month is a usage error, and verify holds afterwards; the
// month the rate was set is charged pro rata; `clearhouse export focus` writes
// both charges, their BilledCost adding to what the ledger charged to the
// micro-dollar.
func TestChargeHoldingFromTheCommandLineChargesOnce(t *testing.T) {
	dsn := storetest.MigratedFile(t) // migrate then finds nothing pending
	if code, out, errOut := runCLI(t, "", "migrate", "--db", dsn); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	// The rate is set on 15 January 2026, on a pool that had none: it applies from
	// that day, so January is charged for 17 of its 31 days and February whole.
	jan := func() time.Time { return time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC) }
	m := exchange.NewMarket(db, ledger.New(db, jan), jan)
	_, err = m.SaveCurve(ctx, "standard", "Standard", auction.DefaultCurve)
	if err == nil {
		_, err = m.AddCluster(ctx, exchange.Cluster{ID: "ap-south"})
	}
	if err == nil {
		_, err = m.AddPool(ctx, exchange.PoolSpec{ClusterID: "ap-south", Resource: "cpu", Unit: "core", Capacity: 4000, UnitCost: ledger.Dollar, Utilization: 0.5, CurveID: "standard"})
	}
	if err == nil {
		_, err = m.AddTeam(ctx, exchange.NewTeam{ID: "search", Budget: 1000 * ledger.Dollar})
	}
	if err == nil {
		err = m.GrantQuota(ctx, "search", "ap-south/cpu", 1600)
	}
	if err == nil {
		_, err = m.SetHoldingCharge(ctx, "ap-south/cpu", ledger.Dollar/10)
	}
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	code, out, errOut := runCLI(t, "", "charge", "holding", "--month", "2026-02", "--db", dsn)
	if code != 0 || !strings.Contains(out, "charged team search $160.00 for ap-south/cpu") || !strings.Contains(out, "1 made ($160.00), 0 made before") {
		t.Fatalf("charge holding: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, "", "charge", "holding", "--month", "2026-02", "--db", dsn)
	if code != 0 || !strings.Contains(out, "0 made ($0.00), 1 made before") {
		t.Fatalf("charge holding again: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut = runCLI(t, "", "charge", "holding", "--month", "Feb", "--db", dsn); code != 2 || !strings.Contains(errOut, "YYYY-MM") {
		t.Fatalf("a malformed month: %d %q", code, errOut)
	}
	if code, out, errOut = runCLI(t, "", "verify", "--db", dsn); code != 0 {
		t.Fatalf("verify: %d\n%s%s", code, out, errOut)
	}
	db, err = store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e, err := ledger.New(db, time.Now).EntryByKey(ctx, "holding/ap-south/cpu/search/2026-02")
	if err != nil || e.Memo != "Holding charge, ap-south/cpu, February 2026: 1,600 cores x $0.10" {
		t.Fatalf("entry %+v, %v", e, err)
	}

	db.Close()

	code, out, errOut = runCLI(t, "", "charge", "holding", "--month", "2026-01", "--db", dsn)
	// 1,600 cores x $0.10 x 17/31 = $87.741935 (87,741,935.48 micro-dollars, rounded down).
	if code != 0 || !strings.Contains(out, "charged team search $87.74 for ap-south/cpu") {
		t.Fatalf("charge holding for January: %d\n%s%s", code, out, errOut)
	}
	focus := filepath.Join(t.TempDir(), "focus.csv")
	// The command line posts at the real time, so the period runs to today.
	if code, out, errOut = runCLI(t, "", "export", "focus", "--from", "2026-01", "--out", focus, "--db", dsn); code != 0 {
		t.Fatalf("export focus: %d\n%s%s", code, out, errOut)
	}
	raw, err := os.ReadFile(focus)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(raw)).ReadAll()
	if err != nil || len(recs) != 3 || recs[0][0] != "BilledCost" {
		t.Fatalf("FOCUS file %q, %v", recs, err)
	}
	var billed ledger.Money
	for _, r := range recs[1:] {
		c, err := ledger.ParseMoney(r[0])
		if err != nil {
			t.Fatal(err)
		}
		billed += c
	}
	if billed != 160*ledger.Dollar+87_741_935 {
		t.Fatalf("FOCUS BilledCost sums to %s, want $247.741935", billed)
	}
	if !strings.Contains(string(raw), "2026-01-15T00:00:00Z") {
		t.Errorf("January's charge does not start on 15 January:\n%s", raw)
	}
	for _, bad := range [][]string{{"--from", "January"}, {"--from", "2026-02", "--to", "2026-01"}} {
		if code, _, errOut := runCLI(t, "", append([]string{"export", "focus", "--db", dsn}, bad...)...); code != 2 || !strings.Contains(errOut, "--") {
			t.Errorf("export focus %v: %d %q", bad, code, errOut)
		}
	}
}
