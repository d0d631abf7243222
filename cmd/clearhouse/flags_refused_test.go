package main

import (
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// auction tick and serve refuse the same cadence flags with the same message (one
// validation), and a refused tick schedules no auction: before issue 36 the tick
// stored an auction whose final round had a 1e9 s time limit.
func TestTickAndServeRefuseTheSameFinalRoundSeconds(t *testing.T) {
	db := storetest.MigratedFile(t) // migrate then finds nothing pending
	if code, out, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: %d\n%s%s", code, out, errOut)
	}
	for _, bad := range []string{"1e9", "-1", "3600.5", "NaN", "+Inf"} {
		tickCode, tickOut, tickErr := runCLI(t, "", "auction", "tick", "--db", db, "--final-round-seconds", bad)
		serveCode, _, serveErr := runCLI(t, "", "serve", "--addr", "127.0.0.1:0", "--db", db, "--final-round-seconds", bad)
		if tickCode == 0 || serveCode == 0 {
			t.Errorf("--final-round-seconds %s: tick exit %d (%s), serve exit %d", bad, tickCode, tickOut, serveCode)
		}
		if !strings.Contains(tickErr, "--final-round-seconds: must be from 0 (the default, 10) to 3600 seconds") {
			t.Errorf("tick --final-round-seconds %s: stderr %q", bad, tickErr)
		}
		if first := strings.SplitN(tickErr, "\n", 2)[0]; !strings.Contains(serveErr, first) {
			t.Errorf("--final-round-seconds %s: tick says %q, serve %q", bad, first, serveErr)
		}
	}
	code, _, errOut := runCLI(t, "", "auction", "tick", "--db", db, "--preview-every", "0s")
	if code == 0 || !strings.Contains(errOut, "--preview-every 0s: must be at least 1s") {
		t.Errorf("tick --preview-every 0s: %d %q", code, errOut)
	}
	d, err := store.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var n int64
	if err := d.Read.Table("auctions").Count(&n).Error; err != nil || n != 0 {
		t.Errorf("%d auctions stored by refused ticks (%v)", n, err)
	}
	// The tick with an accepted value schedules the next auction.
	if code, out, errOut := runCLI(t, "", "auction", "tick", "--db", db, "--final-round-seconds", "3600"); code != 0 || !strings.Contains(out, "scheduled auction") {
		t.Fatalf("tick --final-round-seconds 3600: %d\n%s%s", code, out, errOut)
	}
}
