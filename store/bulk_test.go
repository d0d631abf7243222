package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"

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

// A large Insert (on PostgreSQL, one array per column) writes every kind of value
// Insert takes exactly as the multi-row statement of a small one does: integers of
// each width, NULL and set pointers, texts with quotes and backslashes, floats,
// booleans and times; a duplicate among many rows is gorm.ErrDuplicatedKey and
// changes nothing; BigintArray and TextArray find exactly their rows. Both dialects.
func TestLargeInsertWritesWhatSmallInsertsWrite(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		w := db.Write.WithContext(ctx)
		for _, table := range []string{"big", "small"} {
			if err := w.Exec(`CREATE TABLE ` + table + ` (k TEXT PRIMARY KEY, a BIGINT NOT NULL, b BIGINT NOT NULL, c BIGINT,
				f DOUBLE PRECISION NOT NULL, g DOUBLE PRECISION, ok BOOLEAN NOT NULL, at TIMESTAMP NOT NULL)`).Error; err != nil {
				t.Fatal(err)
			}
		}
		at := time.Date(2026, 11, 29, 1, 2, 3, 456789000, time.UTC)
		const total = 450
		rows := make([][]any, total)
		for i := range rows {
			var c *int64
			var g *float64
			if i%3 != 0 {
				c = new(int64)
				*c = int64(-i)
			}
			if i%4 != 1 {
				g = new(float64)
				*g = float64(i) / 3
			}
			rows[i] = []any{fmt.Sprintf(`k"%d\'{},`, i), i, int64(i) << 40, c, float64(i) / 7, g, i%2 == 0, at.Add(time.Duration(i) * time.Microsecond)}
		}
		cols := []string{"k", "a", "b", "c", "f", "g", "ok", "at"}
		if !store.ColumnArraysFit(cols, rows) {
			t.Fatal("these rows would not go to PostgreSQL as column arrays: every kind here should")
		}
		err := w.Transaction(func(tx *gorm.DB) error {
			if _, err := store.Insert(tx, "big", cols, rows, ""); err != nil {
				return err
			}
			for _, r := range rows {
				if _, err := store.Insert(tx, "small", cols, [][]any{r}, ""); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		dump := func(table string) string {
			var got []struct {
				K    string
				A, B int64
				C    *int64
				F    float64
				G    *float64
				OK   bool
				At   time.Time
			}
			if err := db.Read.Raw("SELECT k, a, b, c, f, g, ok, at FROM " + table + " ORDER BY k").Scan(&got).Error; err != nil {
				t.Fatal(err)
			}
			var sb strings.Builder
			for _, r := range got {
				c, g := "NULL", "NULL"
				if r.C != nil {
					c = fmt.Sprint(*r.C)
				}
				if r.G != nil {
					g = fmt.Sprint(*r.G)
				}
				fmt.Fprintf(&sb, "%q %d %d %s %v %s %v %s\n", r.K, r.A, r.B, c, r.F, g, r.OK, r.At.UTC().Format(time.RFC3339Nano))
			}
			if len(got) != total {
				t.Fatalf("%s: %d rows, want %d", table, len(got), total)
			}
			return sb.String()
		}
		if big, small := dump("big"), dump("small"); big != small {
			t.Fatalf("the large insert wrote\n%.600s\nsmall inserts wrote\n%.600s", big, small)
		}
		dup := make([][]any, 300)
		for i := range dup {
			dup[i] = slices.Clone(rows[i])
			dup[i][0] = fmt.Sprintf("fresh %d", i)
		}
		dup[150] = rows[5]
		err = w.Transaction(func(tx *gorm.DB) error {
			_, err := store.Insert(tx, "big", cols, dup, "")
			return err
		})
		if !errors.Is(err, gorm.ErrDuplicatedKey) {
			t.Fatalf("a duplicate key among many rows: %v, want gorm.ErrDuplicatedKey", err)
		}
		if got := dump("big"); got != dump("small") {
			t.Fatal("a refused insert changed the table")
		}
		if db.Dialect != store.Postgres {
			return
		}
		var n int64
		if err := db.Read.Raw("SELECT COUNT(*) FROM big WHERE k = ANY(CAST(? AS TEXT[])) AND b = ANY(CAST(? AS BIGINT[]))",
			store.TextArray([]string{rows[1][0].(string), rows[2][0].(string), `no"such`}), store.BigintArray([]int64{1 << 40, 3 << 40})).Scan(&n).Error; err != nil || n != 1 {
			t.Fatalf("%d rows by array (%v), want 1", n, err)
		}
	})
}

// On PostgreSQL a large insert sends each column as one array per chunk of rows;
// where a later chunk's values do not fit one array (here an untyped nil among a
// column's *int64s), the whole insert takes the multi-row path instead, and
// nothing is written twice or lost: every chunk's arrays are made before the
// first is sent.
func TestLargeInsertWhoseLaterChunkDoesNotFitAnArray(t *testing.T) {
	defer store.SetMaxArrayRows(250)()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		w := db.Write.WithContext(ctx)
		if err := w.Exec(`CREATE TABLE mixed (k BIGINT PRIMARY KEY, c BIGINT)`).Error; err != nil {
			t.Fatal(err)
		}
		const total = 450
		rows := make([][]any, total)
		want := 0
		for i := range rows {
			var c any = new(int64)
			*c.(*int64) = int64(i)
			if i >= 400 {
				c = nil // NULL, but not a *int64
			} else {
				want += i
			}
			rows[i] = []any{i, c}
		}
		if err := w.Transaction(func(tx *gorm.DB) error {
			_, err := store.Insert(tx, "mixed", []string{"k", "c"}, rows, "")
			return err
		}); err != nil {
			t.Fatalf("insert: %v", err)
		}
		var got struct{ N, Nulls, Sum int }
		if err := db.Read.Raw(`SELECT COUNT(*) AS n, COUNT(*) - COUNT(c) AS nulls, COALESCE(SUM(c), 0) AS sum FROM mixed`).Scan(&got).Error; err != nil {
			t.Fatal(err)
		}
		if got.N != total || got.Nulls != total-400 || got.Sum != want {
			t.Fatalf("rows %d, NULLs %d, sum %d; want %d, %d, %d", got.N, got.Nulls, got.Sum, total, total-400, want)
		}
	})
}
