package besteffort_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestBestEffortSettingsLeaveOneTrailRow: a pool's best-effort settings record one
// row with the settings before and after; refused settings record none.
func TestBestEffortSettingsLeaveOneTrailRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: 5, Email: "op@x.io"})
		tr := audit.NewTrail(db)
		count := func() int {
			rows, err := tr.List(ctx, audit.Filter{Action: "best_effort.settings"})
			if err != nil {
				t.Fatal(err)
			}
			return len(rows)
		}
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "no-such-policy", Alpha: 0.5}); err == nil {
			t.Fatal("a bad policy was accepted")
		}
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/none", Policy: "direct-orig", Alpha: 0.5}); err == nil {
			t.Fatal("settings for no pool were accepted")
		}
		if n := count(); n != 0 {
			t.Fatalf("refused settings recorded %d rows", n)
		}
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.5, MinRuntime: 10 * time.Minute, Exposure: 0.3}); err != nil {
			t.Fatal(err)
		}
		if err := x.be.SetSettings(ctx, besteffort.IdleSettings{Pool: "us-east/cpu", Policy: "direct-orig", Alpha: 0.25, MinRuntime: 5 * time.Minute, Exposure: 0.1}); err != nil {
			t.Fatal(err)
		}
		rows, err := tr.List(ctx, audit.Filter{Action: "best_effort.settings"})
		if err != nil || len(rows) != 2 {
			t.Fatalf("%d rows, %v; want one per change", len(rows), err)
		}
		r := rows[0] // the newest
		if r.Object != "pool:us-east/cpu" || r.Actor != "user 5 op@x.io" ||
			r.BeforeJSON != `{"alpha":0.5,"exposure":0.3,"min_runtime_seconds":600,"policy":"direct-orig"}` ||
			r.AfterJSON != `{"alpha":0.25,"exposure":0.1,"min_runtime_seconds":300,"policy":"direct-orig"}` {
			t.Errorf("row = %s by %q\n before %s\n after  %s", r.Object, r.Actor, r.BeforeJSON, r.AfterJSON)
		}
	})
}
