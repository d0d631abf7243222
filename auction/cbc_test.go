package auction_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// cbcOptimum solves inst's winner determination exactly with COIN-OR's cbc
// (Debian's coinor-cbc; .ci/run installs it): maximise the winners' limits less the
// reserve value of what they take, one bundle or none per bidder, net demand within
// supply. It writes the integer program in LP format, runs cbc, and returns the
// optimal welfare and each winner's bundle. The test is skipped only where cbc is
// not installed.
func cbcOptimum(t testing.TB, inst auction.Instance) (float64, map[string]int) {
	t.Helper()
	bin, err := exec.LookPath("cbc")
	if err != nil {
		t.Skip("cbc is not installed (apt-get install coinor-cbc)")
	}
	reserve := map[string]float64{}
	for _, p := range inst.Pools {
		reserve[p.ID] = p.ReservePrice
	}
	type col struct {
		bidder, bundle int
		w              float64
	}
	var cols []col
	rows := map[string][]string{} // pool -> terms
	var obj, bidRows strings.Builder
	for bi, b := range inst.Bidders {
		var terms []string
		for k, bundle := range b.Bundles {
			j := len(cols)
			w := b.LimitOf(k)
			ids := make([]string, 0, len(bundle))
			for id := range bundle {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			for _, id := range ids {
				w -= bundle[id] * reserve[id]
				if bundle[id] != 0 {
					rows[id] = append(rows[id], fmt.Sprintf("%+.17g x%d", bundle[id], j))
				}
			}
			cols = append(cols, col{bi, k, w})
			fmt.Fprintf(&obj, " %+.17g x%d", w, j)
			terms = append(terms, fmt.Sprintf("+ x%d", j))
		}
		fmt.Fprintf(&bidRows, " b%d: %s <= 1\n", bi, strings.Join(terms, " "))
	}
	var lp strings.Builder
	fmt.Fprintf(&lp, "Maximize\n obj:%s\nSubject To\n%s", obj.String(), bidRows.String())
	for pi, p := range inst.Pools {
		if terms := rows[p.ID]; len(terms) > 0 {
			fmt.Fprintf(&lp, " p%d: %s <= %.17g\n", pi, strings.Join(terms, " "), p.Supply)
		}
	}
	lp.WriteString("Binary\n")
	for j := range cols {
		fmt.Fprintf(&lp, " x%d\n", j)
	}
	lp.WriteString("End\n")
	dir := t.TempDir()
	model, sol := filepath.Join(dir, "wdp.lp"), filepath.Join(dir, "wdp.sol")
	if err := os.WriteFile(model, []byte(lp.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, model, "-ratio", "0", "-allowableGap", "0", "-solve", "-solu", sol).CombinedOutput()
	if err != nil {
		t.Fatalf("cbc: %v\n%s", err, out)
	}
	f, err := os.Open(sol)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "Optimal") {
		t.Fatalf("cbc did not prove optimality: %q", sc.Text())
	}
	welfare, won := 0.0, map[string]int{}
	for sc.Scan() {
		// "      3 x17    1    1234.5": index, name, value, objective coefficient.
		fs := strings.Fields(strings.TrimPrefix(sc.Text(), "**"))
		if len(fs) < 3 || !strings.HasPrefix(fs[1], "x") {
			continue
		}
		j, err1 := strconv.Atoi(fs[1][1:])
		v, err2 := strconv.ParseFloat(fs[2], 64)
		if err1 != nil || err2 != nil || j < 0 || j >= len(cols) {
			t.Fatalf("cbc solution line %q", sc.Text())
		}
		if v > 0.5 {
			c := cols[j]
			if _, dup := won[inst.Bidders[c.bidder].ID]; dup {
				t.Fatalf("cbc gives bidder %s two bundles", inst.Bidders[c.bidder].ID)
			}
			won[inst.Bidders[c.bidder].ID] = c.bundle
			welfare += c.w
		}
	}
	return welfare, won
}

// The cbc helper agrees with brute force on small markets, so it can be trusted
// as the yardstick on the large ones.
func TestCBCAgreesWithBruteForce(t *testing.T) {
	positive := 0
	for seed := range uint64(20) {
		inst := auction.Generate(auction.GenConfig{Seed: seed, Clusters: 2, Resources: 2, Bidders: 7, Scarcity: 2})
		want := bruteForce(inst)
		if want > 0 {
			positive++
		}
		got, _ := cbcOptimum(t, inst)
		if diff := got - want; diff > 1e-6*max(1, want) || diff < -1e-6*max(1, want) {
			t.Fatalf("seed %d: cbc %v, brute force %v", seed, got, want)
		}
	}
	if positive < 10 {
		t.Fatalf("only %d of 20 markets trade: the comparison is too weak", positive)
	}
}
