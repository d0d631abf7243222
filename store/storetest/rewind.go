package storetest

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Rewinder snapshots db, a PostgreSQL database from NewPostgres, and returns a
// function that puts it back as it was then: every table's rows (goose's version
// table too) and every sequence's position. A test that needs a freshly migrated
// database many times over (a property test's hundred runs) rewinds one instead:
// a fresh schema runs every migration's DDL, 2 to 5 s a schema on the shared 2-core
// machine, which a rewind replaces with a few deletes and small inserts. The
// rewind fails the test if the schema's shape (tables, columns, indexes,
// constraints, sequences, triggers, functions, views, types) changed since the
// snapshot (then it could not give back the database the snapshot was of), and
// must not run while anything else uses db.
func Rewinder(t testing.TB, db *store.DB) func() {
	t.Helper()
	return rewinder(t, db, false)
}

// rewinder is Rewinder; truncate makes it truncate as for a user who is not a
// superuser, for its test.
func rewinder(t testing.TB, db *store.DB, truncate bool) func() {
	t.Helper()
	if db.Dialect != store.Postgres {
		t.Fatal("storetest: Rewinder is for PostgreSQL: on SQLite, New copies a migrated file in milliseconds")
	}
	snap, err := takeSnapshot(db.Write)
	if err != nil {
		t.Fatalf("storetest: Rewinder: %v", err)
	}
	snap.super = snap.super && !truncate
	return func() {
		t.Helper()
		if err := db.Write.Transaction(snap.restore); err != nil {
			t.Fatalf("storetest: rewinding: %v", err)
		}
	}
}

// A snapshot is the rows and sequence positions of the PostgreSQL schema that is
// current_schema() where it was taken, and that schema's shape.
type snapshot struct {
	shape     string
	rows      map[string]string // table -> its rows as a JSON array, for tables that have rows
	positions map[string]position
	nonEmpty  string // one query naming the tables that hold rows
	super     bool   // the user is a superuser: delete with triggers off instead of truncating
}

type position struct {
	LastValue int64
	IsCalled  bool
}

// errShapeChanged is restore's error when the schema is not the one the
// snapshot was of.
var errShapeChanged = errors.New("the schema changed since the snapshot, so a rewind cannot restore it")

// takeSnapshot reads the current schema through q.
func takeSnapshot(q *gorm.DB) (*snapshot, error) {
	var tables, sequences []string
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') ORDER BY 1`).Scan(&tables).Error; err != nil {
		return nil, fmt.Errorf("listing tables: %w", err)
	}
	if err := q.Raw(`SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind = 'S' ORDER BY 1`).Scan(&sequences).Error; err != nil {
		return nil, fmt.Errorf("listing sequences: %w", err)
	}
	if len(tables) == 0 {
		return nil, errors.New("no tables: is the database migrated?")
	}
	s := &snapshot{rows: map[string]string{}, positions: map[string]position{}}
	var err error
	if s.shape, err = shapeOf(q); err != nil {
		return nil, err
	}
	for _, tb := range tables {
		var js string
		if err := q.Raw(fmt.Sprintf(`SELECT coalesce(json_agg(r), '[]')::text FROM %s r`, quoteIdent(tb))).Scan(&js).Error; err != nil {
			return nil, fmt.Errorf("reading %s: %w", tb, err)
		}
		if js != "[]" {
			s.rows[tb] = js
		}
	}
	for _, seq := range sequences {
		var p position
		if err := q.Raw(fmt.Sprintf(`SELECT last_value, is_called FROM %s`, quoteIdent(seq))).Scan(&p).Error; err != nil {
			return nil, fmt.Errorf("reading sequence %s: %w", seq, err)
		}
		s.positions[seq] = p
	}
	// Which tables hold rows, in one query: only those are emptied. A superuser
	// (as the tests' PostgreSQL user is in CI and on the project's machines)
	// deletes their rows with triggers and foreign keys off for the transaction
	// (session_replication_role), which empties every table that held rows, so no
	// reference is left dangling; others truncate them, by CASCADE with the tables
	// referring to them, which creates new files for every table and index
	// truncated (1 to 2 s where the deletes take tens of milliseconds).
	holding := make([]string, len(tables))
	for i, tb := range tables {
		holding[i] = fmt.Sprintf(`SELECT %s AS name WHERE EXISTS (SELECT 1 FROM %s)`, quoteLiteral(tb), quoteIdent(tb))
	}
	s.nonEmpty = strings.Join(holding, " UNION ALL ")
	if err := q.Raw(`SELECT current_setting('is_superuser') = 'on'`).Scan(&s.super).Error; err != nil {
		return nil, err
	}
	return s, nil
}

// restore puts the current schema back as it was at the snapshot, through tx, a
// transaction; errShapeChanged if its shape is not the snapshot's.
func (s *snapshot) restore(tx *gorm.DB) error {
	now, err := shapeOf(tx)
	if err != nil {
		return err
	}
	if now != s.shape {
		return fmt.Errorf("%w:\nthen:\n%s\nnow:\n%s", errShapeChanged, s.shape, now)
	}
	var full []string
	if err := tx.Raw(s.nonEmpty).Scan(&full).Error; err != nil {
		return err
	}
	if s.super {
		if err := tx.Exec(`SET LOCAL session_replication_role = replica`).Error; err != nil {
			return err
		}
		for _, tb := range full {
			if err := tx.Exec("DELETE FROM " + quoteIdent(tb)).Error; err != nil {
				return fmt.Errorf("%s: %w", tb, err)
			}
		}
	} else if len(full) > 0 {
		for i, tb := range full {
			full[i] = quoteIdent(tb)
		}
		if err := tx.Exec("TRUNCATE " + strings.Join(full, ", ") + " CASCADE").Error; err != nil {
			return err
		}
	}
	for _, tb := range slices.Sorted(maps.Keys(s.rows)) {
		if err := tx.Exec(fmt.Sprintf(`INSERT INTO %s OVERRIDING SYSTEM VALUE SELECT * FROM json_populate_recordset(NULL::%[1]s, ?::json)`,
			quoteIdent(tb)), s.rows[tb]).Error; err != nil {
			return fmt.Errorf("%s: %w", tb, err)
		}
	}
	for _, seq := range slices.Sorted(maps.Keys(s.positions)) {
		p := s.positions[seq]
		if err := tx.Exec(`SELECT setval(?::regclass, ?, ?)`, quoteIdent(seq), p.LastValue, p.IsCalled).Error; err != nil {
			return fmt.Errorf("sequence %s: %w", seq, err)
		}
	}
	return nil
}

// shapeOf describes the current schema's definitions, everything but its rows:
// tables, views and sequences with their columns, types and defaults; indexes,
// constraints, triggers, functions, sequence parameters and types. A test that
// adds, drops or alters any of them changes it.
func shapeOf(q *gorm.DB) (string, error) {
	var s string
	err := q.Raw(`SELECT concat_ws(E'\n--\n',
		(SELECT string_agg(concat_ws(' ', c.relname, c.relkind, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod),
				a.attnotnull, a.attidentity, a.attgenerated, pg_get_expr(d.adbin, d.adrelid)), E'\n' ORDER BY c.relname, a.attnum)
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
			LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
			WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'S', 'v', 'm', 'i', 'I')),
		(SELECT string_agg(pg_get_indexdef(i.indexrelid), E'\n' ORDER BY pg_get_indexdef(i.indexrelid))
			FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema()),
		(SELECT string_agg(concat_ws(' ', co.conrelid::regclass::text, co.conname, pg_get_constraintdef(co.oid)), E'\n'
				ORDER BY co.conrelid::regclass::text, co.conname)
			FROM pg_constraint co JOIN pg_namespace n ON n.oid = co.connamespace WHERE n.nspname = current_schema()),
		(SELECT string_agg(pg_get_triggerdef(tg.oid), E'\n' ORDER BY pg_get_triggerdef(tg.oid))
			FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND NOT tg.tgisinternal),
		(SELECT string_agg(concat_ws(' ', p.proname, pg_get_function_identity_arguments(p.oid), md5(p.prosrc)), E'\n'
				ORDER BY p.proname, pg_get_function_identity_arguments(p.oid))
			FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()),
		(SELECT string_agg(concat_ws(' ', c.relname, pg_get_viewdef(c.oid)), E'\n' ORDER BY c.relname)
			FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind IN ('v', 'm')),
		(SELECT string_agg(concat_ws(' ', c.relname, sq.seqtypid::regtype::text, sq.seqstart, sq.seqincrement, sq.seqmax,
				sq.seqmin, sq.seqcache, sq.seqcycle), E'\n' ORDER BY c.relname)
			FROM pg_sequence sq JOIN pg_class c ON c.oid = sq.seqrelid JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema()),
		(SELECT string_agg(concat_ws(' ', ty.typname, ty.typtype, ty.typbasetype::regtype::text,
				(SELECT string_agg(e.enumlabel, ',' ORDER BY e.enumsortorder) FROM pg_enum e WHERE e.enumtypid = ty.oid)), E'\n' ORDER BY ty.typname)
			FROM pg_type ty JOIN pg_namespace n ON n.oid = ty.typnamespace
			WHERE n.nspname = current_schema() AND ty.typtype IN ('e', 'd')))`).Scan(&s).Error
	if err != nil {
		return "", fmt.Errorf("reading the schema's shape: %w", err)
	}
	return s, nil
}
