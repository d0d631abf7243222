package storetest

import (
	"fmt"
	"testing"

	"gorm.io/gorm"
)

// A rewind gives back the database as it was at the snapshot: rows written,
// changed and deleted since, in seeded tables and others, and sequences moved on,
// all as they were; and the next identity values are the ones a fresh schema gives.
// Both ways of emptying the tables: a superuser's deletes and the truncation.
func TestRewindRestoresRowsAndSequences(t *testing.T) {
	t.Parallel() // its own schemas
	for _, truncate := range []bool{false, true} {
		t.Run(fmt.Sprintf("truncate=%v", truncate), func(t *testing.T) { testRewind(t, truncate) })
	}
}

func testRewind(t *testing.T, truncate bool) {
	db, ok := NewPostgres(t)
	if !ok {
		t.Skip(PostgresEnv + " is not set")
	}
	q := db.Write
	state := func() string { t.Helper(); return stateOf(t, q) }
	fresh := state()
	rewind := rewinder(t, db, truncate)
	users := 0
	nextUser := func() string {
		t.Helper()
		users++
		var id int64
		if err := q.Raw(`INSERT INTO users (email, role, created_at) VALUES (?, 'finance', now()) RETURNING id`,
			fmt.Sprintf("u%d@x.io", users)).Scan(&id).Error; err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(id)
	}
	first := nextUser()
	for _, stmt := range []string{
		`INSERT INTO teams (id, name, created_at) VALUES ('t', 'T', now())`,
		`UPDATE plan_state SET version = version + 7`,
		`DELETE FROM schema_compat WHERE version = (SELECT max(version) FROM schema_compat)`,
		`INSERT INTO audit (seq, at, actor, action, prev_hash, hash) VALUES (1, now(), 'test', 'x', '', 'h')`,
		`UPDATE audit_head SET seq = 1, hash = 'h'`,
	} {
		if err := q.Exec(stmt).Error; err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	nextUser()
	if state() == fresh {
		t.Fatal("the writes changed nothing: the test proves nothing")
	}
	for range 2 { // a second rewind after a first one, as a property test's runs do
		rewind()
		if got := state(); got != fresh {
			t.Fatalf("after a rewind:\n%s\nwant, as at the snapshot:\n%s", got, fresh)
		}
		if again := nextUser(); again != first {
			t.Errorf("first identity value after a rewind %s, want %s as on the fresh schema", again, first)
		}
	}
}

// stateOf is every row and sequence position of q's current schema, as text.
func stateOf(t *testing.T, q *gorm.DB) string {
	t.Helper()
	var tables, sequences []string
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'r' ORDER BY 1`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY 1`).Scan(&sequences).Error; err != nil {
		t.Fatal(err)
	}
	out := ""
	for _, tb := range tables {
		var js string
		if err := q.Raw(fmt.Sprintf(`SELECT coalesce(json_agg(r ORDER BY r::text), '[]')::text FROM %s r`, quoteIdent(tb))).Scan(&js).Error; err != nil {
			t.Fatal(err)
		}
		out += tb + " " + js + "\n"
	}
	for _, s := range sequences {
		var js string
		if err := q.Raw(fmt.Sprintf(`SELECT row_to_json(r)::text FROM (SELECT last_value, is_called FROM %s) r`, quoteIdent(s))).Scan(&js).Error; err != nil {
			t.Fatal(err)
		}
		out += s + " " + js + "\n"
	}
	return out
}
