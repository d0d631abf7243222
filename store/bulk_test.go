package store_test

import (
	"context"
	"errors"
	"fmt"
	"gorm.io/gorm"
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

// Insert writes every row of a list longer than one statement takes (full chunks
// and a shorter last one), returns each row's id in the rows' order, and reports a
// unique key's violation as gorm.ErrDuplicatedKey, changing nothing, inside a
// transaction, on both dialects.
func TestInsertWritesEveryChunkAndReturnsIDsInOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		if err := db.Write.WithContext(ctx).Exec(`CREATE TABLE things (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, n BIGINT)`).Error; err != nil {
			t.Fatal(err)
		}
		if db.Dialect == store.Postgres {
			if err := db.Write.Exec(`DROP TABLE things; CREATE TABLE things (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, n BIGINT)`).Error; err != nil {
				t.Fatal(err)
			}
		}
		const total = 12_345 // 5,000 rows a statement at two columns: two full chunks and a tail
		rows := make([][]any, total)
		for i := range rows {
			rows[i] = []any{fmt.Sprintf("thing %d", i), int64(i * 3)}
		}
		var ids []int64
		err := db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			var err error
			ids, err = store.Insert(tx, "things", []string{"name", "n"}, rows, "id")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != total {
			t.Fatalf("%d ids for %d rows", len(ids), total)
		}
		var got []struct {
			ID   int64
			Name string
			N    int64
		}
		if err := db.Read.Raw("SELECT id, name, n FROM things ORDER BY id").Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		byID := map[int64]int{}
		for i, id := range ids {
			byID[id] = i
		}
		if len(got) != total || len(byID) != total {
			t.Fatalf("%d rows and %d distinct ids, want %d", len(got), len(byID), total)
		}
		for _, r := range got {
			i, ok := byID[r.ID]
			if !ok || r.Name != fmt.Sprintf("thing %d", i) || r.N != int64(i*3) {
				t.Fatalf("row %+v does not match the row whose id Insert returned", r)
			}
		}
		err = db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
			_, err := store.Insert(tx, "things", []string{"name", "n"}, [][]any{{"new", int64(1)}, {"thing 7", int64(1)}}, "")
			return err
		})
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("a duplicate name: %v, want gorm.ErrDuplicatedKey", err)
		}
		var n int64
		if err := db.Read.Raw("SELECT COUNT(*) FROM things").Scan(&n).Error; err != nil || n != total {
			t.Fatalf("%d rows after a refused insert (%v), want %d", n, err, total)
		}
	})
}
