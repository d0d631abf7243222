package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

var at = time.Date(2026, 3, 2, 9, 0, 0, 123456789, time.UTC)

func record(t *testing.T, db *store.DB, ctx context.Context, e audit.Event) {
	t.Helper()
	err := db.Write.Transaction(func(tx *gorm.DB) error { return audit.Record(ctx, tx, e) })
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
}

func checks(ps []audit.Problem) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Check+": "+p.Detail)
	}
	return out
}

// threeRows records a grant by a person, a pool edit by a token and a restore from
// the command line.
func threeRows(t *testing.T, db *store.DB) {
	ctx := context.Background()
	record(t, db, audit.WithActor(ctx, audit.Actor{Kind: audit.KindUser, UserID: 3, Email: "fin@example.com", Address: "10.0.0.7"}),
		audit.Event{Action: "budget.grant", Object: "team:ml", Before: map[string]int64{"balance": 0}, After: map[string]int64{"balance": 5_000_000}, At: at})
	record(t, db, audit.WithActor(ctx, audit.Actor{Kind: audit.KindToken, TokenID: 7, UserID: 4, Email: "op@example.com"}),
		audit.Event{Action: "pool.update", Object: "pool:c1/gpu", Before: map[string]int64{"capacity": 8}, After: map[string]int64{"capacity": 16}, At: at.Add(time.Minute)})
	record(t, db, audit.WithActor(ctx, audit.Actor{Kind: audit.KindCLI, Name: "root"}),
		audit.Event{Action: "database.restore", Object: "database", After: map[string]string{"from": "b.db"}, At: at.Add(2 * time.Minute)})
}

func TestRecordChainsRowsAndListsThem(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		tr := audit.NewTrail(db)
		ctx := context.Background()
		if ps, err := tr.Verify(ctx); err != nil || len(ps) != 0 {
			t.Fatalf("Verify of a whole trail = %v, %v; want nothing", checks(ps), err)
		}
		rows, err := tr.List(ctx, audit.Filter{})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 3 || rows[0].Seq != 3 || rows[2].Seq != 1 {
			t.Fatalf("List = %d rows (first seq %d); want 3 newest first", len(rows), rows[0].Seq)
		}
		g := rows[2]
		if g.Actor != "user 3 fin@example.com" || g.Address != "10.0.0.7" || g.Action != "budget.grant" || g.Object != "team:ml" ||
			g.BeforeJSON != `{"balance":0}` || g.AfterJSON != `{"balance":5000000}` || *g.ActorUserID != 3 || g.ActorTokenID != nil {
			t.Errorf("grant row = %+v", g)
		}
		if !g.At.Equal(at.Truncate(time.Microsecond)) || g.At.Location() != time.UTC {
			t.Errorf("grant row at %v; want %v in UTC", g.At, at.Truncate(time.Microsecond))
		}
		if rows[1].Actor != "token 7 of user 4 op@example.com" || *rows[1].ActorTokenID != 7 {
			t.Errorf("token row actor = %q", rows[1].Actor)
		}
		if rows[0].Actor != "cli root" || rows[0].BeforeJSON != "" || rows[0].PrevHash != rows[1].Hash {
			t.Errorf("restore row = %+v", rows[0])
		}
		for _, tc := range []struct {
			f    audit.Filter
			want int
		}{
			{audit.Filter{Actor: "FIN@"}, 1},
			{audit.Filter{Action: "pool.update"}, 1},
			{audit.Filter{Action: "pool."}, 1},
			{audit.Filter{Action: "pool"}, 0},
			{audit.Filter{Object: "c1/"}, 1},
			{audit.Filter{Object: "%"}, 0},
			{audit.Filter{From: at.Add(30 * time.Second)}, 2},
			{audit.Filter{From: at.Add(30 * time.Second), To: at.Add(90 * time.Second)}, 1},
			{audit.Filter{Before: 3}, 2},
			{audit.Filter{Limit: 1}, 1},
		} {
			rows, err := tr.List(ctx, tc.f)
			if err != nil || len(rows) != tc.want {
				t.Errorf("List(%+v) = %d rows, %v; want %d", tc.f, len(rows), err, tc.want)
			}
		}
	})
}

func TestRowMatchesTheSchema(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		storetest.AssertModelsMatchSchema(t, db, &audit.Row{})
	})
}

func TestActorWithoutContextIsSystem(t *testing.T) {
	t.Parallel()
	if a := audit.From(context.Background()); a.String() != "system" {
		t.Errorf("From(empty) = %q; want system", a.String())
	}
}

func TestRecordRefusesAnEventWithoutAction(t *testing.T) {
	t.Parallel()
	db := storetest.New(t)
	err := db.Write.Transaction(func(tx *gorm.DB) error { return audit.Record(context.Background(), tx, audit.Event{Object: "x"}) })
	if err == nil {
		t.Fatal("Record without an action: no error")
	}
	rows, _ := audit.NewTrail(db).List(context.Background(), audit.Filter{})
	if len(rows) != 0 {
		t.Errorf("%d rows after a refused event", len(rows))
	}
}

func TestRolledBackChangeLeavesNoRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		err := db.Write.Transaction(func(tx *gorm.DB) error {
			if err := audit.Record(ctx, tx, audit.Event{Action: "budget.grant", Object: "team:ml"}); err != nil {
				return err
			}
			return fmt.Errorf("the change failed after recording")
		})
		if err == nil {
			t.Fatal("the transaction did not fail")
		}
		record(t, db, ctx, audit.Event{Action: "budget.grant", Object: "team:ml"})
		tr := audit.NewTrail(db)
		rows, _ := tr.List(ctx, audit.Filter{})
		if len(rows) != 1 || rows[0].Seq != 1 {
			t.Fatalf("rows = %+v; want the one committed, numbered 1", rows)
		}
		if ps, _ := tr.Verify(ctx); len(ps) != 0 {
			t.Errorf("Verify = %v", checks(ps))
		}
	})
}

// tamper runs sql on db around the append-only triggers.
func tamper(t *testing.T, db *store.DB, sql string) {
	t.Helper()
	var err error
	if db.Dialect == store.Postgres {
		err = db.Write.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("ALTER TABLE audit DISABLE TRIGGER audit_no_change").Error; err != nil {
				return err
			}
			if err := tx.Exec(sql).Error; err != nil {
				return err
			}
			return tx.Exec("ALTER TABLE audit ENABLE TRIGGER audit_no_change").Error
		})
	} else {
		err = db.Write.Transaction(func(tx *gorm.DB) error {
			for _, s := range []string{"DROP TRIGGER audit_no_update", "DROP TRIGGER audit_no_delete", sql} {
				if err := tx.Exec(s).Error; err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil {
		t.Fatalf("tampering: %v", err)
	}
}

func TestTheTrailRefusesUpdateAndDelete(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		for _, sql := range []string{"UPDATE audit SET after_json = '{}' WHERE seq = 1", "DELETE FROM audit WHERE seq = 3"} {
			if err := db.Write.Exec(sql).Error; err == nil || !strings.Contains(err.Error(), "append-only") {
				t.Errorf("%s: err = %v; want the append-only refusal", sql, err)
			}
		}
	})
}

func TestVerifyFindsAnEditedRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		tamper(t, db, `UPDATE audit SET after_json = '{"balance":9000000}' WHERE seq = 1`)
		ps, err := audit.NewTrail(db).Verify(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != 1 || ps[0].Check != "audit trail content" || !strings.Contains(ps[0].Detail, "row 1 ") {
			t.Errorf("Verify = %v; want row 1's content", checks(ps))
		}
	})
}

func TestVerifyFindsAnEditedRowWithItsHashRecomputed(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		// Someone who edits a row and writes a fitting hash breaks the next row's link.
		tamper(t, db, `UPDATE audit SET hash = 'f00d' WHERE seq = 2`)
		ps, _ := audit.NewTrail(db).Verify(context.Background())
		var got []string
		for _, p := range ps {
			got = append(got, p.Check)
		}
		if strings.Join(got, ",") != "audit trail content,audit trail chain" {
			t.Errorf("Verify = %v; want row 2's content and row 3's chain", checks(ps))
		}
	})
}

func TestVerifyFindsADeletedRow(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		tamper(t, db, `DELETE FROM audit WHERE seq = 2`)
		ps, _ := audit.NewTrail(db).Verify(context.Background())
		if len(ps) != 2 || ps[0].Check != "audit trail numbering" || !strings.Contains(ps[0].Detail, "rows 2 to 2 are missing") || ps[1].Check != "audit trail chain" {
			t.Errorf("Verify = %v; want row 2 missing", checks(ps))
		}
	})
}

func TestVerifyFindsTheNewestRowDeleted(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		tamper(t, db, `DELETE FROM audit WHERE seq = 3`)
		ps, _ := audit.NewTrail(db).Verify(context.Background())
		if len(ps) != 1 || ps[0].Check != "audit trail head" {
			t.Errorf("Verify = %v; want the head naming a missing row", checks(ps))
		}
	})
}

// TestConcurrentWritersKeepOneChain: on PostgreSQL, many transactions appending at
// once queue on the head's row; the trail ends numbered without gap, chained, each
// event once.
func TestConcurrentWritersKeepOneChain(t *testing.T) {
	t.Parallel()
	db, ok := storetest.NewPostgres(t)
	if !ok {
		t.Skip("needs PostgreSQL (CLEARHOUSE_TEST_POSTGRES)")
	}
	other := storetest.Another(t, db)
	const writers, each = 24, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := db
			if w%2 == 1 {
				d = other // a second server on the same database
			}
			ctx := audit.WithActor(context.Background(), audit.Actor{Kind: audit.KindUser, UserID: int64(w + 1)})
			for i := range each {
				err := d.Write.Transaction(func(tx *gorm.DB) error {
					return audit.Record(ctx, tx, audit.Event{Action: "budget.grant", Object: fmt.Sprintf("team:%d-%d", w, i)})
				})
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Record: %v", err)
	}
	tr := audit.NewTrail(db)
	ps, err := tr.Verify(context.Background())
	if err != nil || len(ps) != 0 {
		t.Fatalf("Verify after concurrent writers = %v, %v", checks(ps), err)
	}
	rows, _ := tr.List(context.Background(), audit.Filter{Limit: writers * each * 2})
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Object] = true
	}
	if len(rows) != writers*each || len(seen) != writers*each {
		t.Errorf("%d rows, %d objects; want %d of each", len(rows), len(seen), writers*each)
	}
}

func TestExportsCSVAndJSONLines(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		threeRows(t, db)
		ctx := context.Background()
		// A text cell a spreadsheet would read as a formula is made safe.
		record(t, db, audit.WithActor(ctx, audit.Actor{Kind: audit.KindCLI, Name: "=cmd"}), audit.Event{Action: "team.add", Object: "=1+1"})
		tr := audit.NewTrail(db)
		var csvOut bytes.Buffer
		if err := tr.WriteCSV(ctx, &csvOut, audit.Filter{Action: "budget.grant"}); err != nil {
			t.Fatal(err)
		}
		want := "seq,at,actor,actor_user_id,actor_token_id,address,action,object,before,after,hash\n" +
			`1,2026-03-02T09:00:00Z,user 3 fin@example.com,3,,10.0.0.7,budget.grant,team:ml,"{""balance"":0}","{""balance"":5000000}",`
		if !strings.HasPrefix(csvOut.String(), want) || strings.Count(csvOut.String(), "\n") != 2 {
			t.Errorf("CSV =\n%s\nwant it to begin\n%s", csvOut.String(), want)
		}
		csvOut.Reset()
		if err := tr.WriteCSV(ctx, &csvOut, audit.Filter{Action: "team.add"}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(csvOut.String(), ",team.add,'=1+1,") {
			t.Errorf("CSV = %s", csvOut.String())
		}
		var jl bytes.Buffer
		if err := tr.WriteJSONLines(ctx, &jl, audit.Filter{}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(jl.String()), "\n")
		if len(lines) != 4 {
			t.Fatalf("%d JSON lines; want 4", len(lines))
		}
		var first audit.JSONRow
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatal(err)
		}
		if first.Seq != 1 || string(first.After) != `{"balance":5000000}` || first.Action != "budget.grant" || first.Hash == "" {
			t.Errorf("first JSON line = %s", lines[0])
		}
	})
}
