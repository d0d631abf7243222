package store_test

import (
	"context"
	"testing"

	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// UpdateRows changes exactly the rows its keys name, to their own values (NULL
// included), and leaves every other row and column as it was, on both dialects.
func TestUpdateRowsSetsEachRowItsOwnValues(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		tx := db.Write.WithContext(ctx)
		if err := tx.Exec("CREATE TABLE pairs (a BIGINT NOT NULL, b BIGINT NOT NULL, note TEXT, n BIGINT, PRIMARY KEY (a, b))").Error; err != nil {
			t.Fatal(err)
		}
		for a := range 3 {
			for b := range 3 {
				if err := tx.Exec("INSERT INTO pairs (a, b, note, n) VALUES (?, ?, 'old', 7)", a, b).Error; err != nil {
					t.Fatal(err)
				}
			}
		}
		key := []store.Column{{Name: "a", Type: "BIGINT"}, {Name: "b", Type: "BIGINT"}}
		set := []store.Column{{Name: "note", Type: "TEXT"}, {Name: "n", Type: "BIGINT"}}
		var none *int64
		n, err := store.UpdateRows(ctx, tx, "pairs", key, set, [][]any{
			{int64(0), int64(1), `{"x":1}`, int64(10)},
			{int64(2), int64(0), "it's", none},
			{int64(9), int64(9), "nobody", int64(1)}, // no such row
		})
		if err != nil {
			t.Fatal(err)
		}
		if n != 2 {
			t.Errorf("affected %d rows, want 2", n)
		}
		if _, err := store.UpdateRows(ctx, tx, "pairs", key, set, [][]any{{int64(1), int64(1), "short"}}); err == nil {
			t.Error("a row with too few values was taken")
		}
		type row struct {
			A, B int64
			Note string
			N    *int64
		}
		var rows []row
		if err := tx.Raw("SELECT a, b, note, n FROM pairs ORDER BY a, b").Scan(&rows).Error; err != nil {
			t.Fatal(err)
		}
		if len(rows) != 9 {
			t.Fatalf("%d rows, want 9", len(rows))
		}
		for _, r := range rows {
			note, num := "old", int64(7)
			switch {
			case r.A == 0 && r.B == 1:
				note, num = `{"x":1}`, 10
			case r.A == 2 && r.B == 0:
				note, num = "it's", -1
			}
			got := int64(-1)
			if r.N != nil {
				got = *r.N
			}
			if r.Note != note || got != num {
				t.Errorf("row (%d, %d) = %q, %d; want %q, %d", r.A, r.B, r.Note, got, note, num)
			}
		}
	})
}
