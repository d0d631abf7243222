package store_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"gorm.io/gorm"
)

// A Batcher's Run makes the writes it takes in one go; the ones it leaves run
// alone, each in its savepoint; a write it refuses returns its error and changes
// nothing; and when Run fails, all it wrote is undone and every write runs alone.
func TestBatcherTakesWritesAndFallsBack(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	if err := db.Write.Exec("CREATE TABLE batched (k TEXT PRIMARY KEY)").Error; err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	b := &store.Batcher{Run: func(tx *gorm.DB, items []any) ([]store.BatchOutcome, error) {
		out := make([]store.BatchOutcome, len(items))
		var rows [][]any
		for i, it := range items {
			switch k := it.(string); {
			case strings.HasPrefix(k, "alone:"):
			case strings.HasPrefix(k, "bad:"):
				out[i] = store.BatchOutcome{Done: true, Err: refused}
			default:
				rows = append(rows, []any{k})
				out[i] = store.BatchOutcome{Done: true}
			}
		}
		if err := store.InsertKept(tx, "batched", []string{"k"}, rows); err != nil {
			return nil, err
		}
		if slices.Contains(items, any("boom")) {
			return nil, errors.New("boom")
		}
		return out, nil
	}}
	// run makes every write concurrently in one batch; a key with "plain:" is a
	// Grouped write of its own.
	run := func(keys ...string) map[string]error {
		resume := db.PauseGroup()
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i, k := range keys {
			wg.Add(1)
			go func() {
				defer wg.Done()
				alone := func(tx *gorm.DB) error {
					if strings.HasPrefix(k, "bad:") {
						return refused
					}
					return tx.Exec("INSERT INTO batched (k) VALUES (?)", k+"/alone").Error
				}
				if strings.HasPrefix(k, "plain:") {
					errs[i] = db.Grouped(context.Background(), alone)
				} else {
					errs[i] = db.GroupedBatch(context.Background(), b, k, alone)
				}
			}()
		}
		for db.Pending() < len(keys) {
			runtime.Gosched()
		}
		resume()
		wg.Wait()
		out := map[string]error{}
		for i, k := range keys {
			out[k] = errs[i]
		}
		return out
	}
	rows := func() []string {
		var ks []string
		if err := db.Read.Raw("SELECT k FROM batched ORDER BY k").Scan(&ks).Error; err != nil {
			t.Fatal(err)
		}
		return ks
	}

	errs := run("a", "bad:b", "alone:c", "plain:d", "e")
	for k, err := range errs {
		if want := map[bool]error{true: refused, false: nil}[k == "bad:b"]; err != want {
			t.Errorf("%s: %v, want %v", k, err, want)
		}
	}
	if got, want := rows(), []string{"a", "alone:c/alone", "e", "plain:d/alone"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	errs = run("f", "boom", "bad:g")
	if errs["f"] != nil || errs["boom"] != nil || errs["bad:g"] != refused {
		t.Errorf("after a failed batch: %v", errs)
	}
	if got, want := rows(), []string{"a", "alone:c/alone", "boom/alone", "e", "f/alone", "plain:d/alone"}; !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// InSet pads an IN list to a power of two with its last value.
func TestInSetPadsToAPowerOfTwo(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]int{1: 1, 2: 2, 3: 4, 5: 8, 128: 128, 129: 256} {
		vals := make([]int, n)
		for i := range vals {
			vals[i] = i
		}
		in, args := store.InSet(vals)
		if len(args) != want || strings.Count(in, "?") != want || args[len(args)-1] != n-1 {
			t.Errorf("InSet of %d values: %s with %v, want %d placeholders ending with %d", n, in, args, want, n-1)
		}
	}
}
