package storetest

import (
	"testing"

	"github.com/clearhouse/clearhouse/store"
)

// A pooled schema comes back to the next test as freshly migrated: the rows a test
// wrote and the sequences it moved are gone, and the first identity value is the
// fresh schema's. A schema whose shape a test changed is dropped, never given out
// again. Serial: a parallel test of this package could take the schema given back
// before the next subtest asks for one.
func TestPooledSchemaComesBackFreshOrIsDropped(t *testing.T) {
	if PostgresURL(t) == "" {
		t.Skip(PostgresEnv + " is not set")
	}
	var schema, fresh, firstUser string
	insertUser := func(t *testing.T, db *store.DB) string {
		t.Helper()
		var id string
		if err := db.Write.Raw(`INSERT INTO users (email, role, created_at) VALUES ('a@x.io', 'finance', now()) RETURNING id::text`).Scan(&id).Error; err != nil {
			t.Fatal(err)
		}
		return id
	}
	t.Run("write", func(t *testing.T) {
		db, _ := NewPostgres(t)
		schema = currentSchema(t, db)
		fresh = stateOf(t, db.Write)
		firstUser = insertUser(t, db)
		for _, stmt := range []string{
			`INSERT INTO teams (id, name, created_at) VALUES ('t', 'T', now())`,
			`UPDATE plan_state SET version = version + 7`,
			`DELETE FROM schema_compat WHERE version = (SELECT max(version) FROM schema_compat)`,
		} {
			if err := db.Write.Exec(stmt).Error; err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
		}
		if stateOf(t, db.Write) == fresh {
			t.Fatal("the writes changed nothing: the test proves nothing")
		}
	})
	t.Run("reuse", func(t *testing.T) {
		db, _ := NewPostgres(t)
		if got := currentSchema(t, db); got != schema {
			t.Fatalf("second test got schema %s, want the pooled %s given back by the first", got, schema)
		}
		if got := stateOf(t, db.Write); got != fresh {
			t.Fatalf("the pooled schema was not rewound:\n%s\nwant, as freshly migrated:\n%s", got, fresh)
		}
		if id := insertUser(t, db); id != firstUser {
			t.Errorf("first identity value on the pooled schema %s, want %s as on the fresh one", id, firstUser)
		}
		if err := db.Write.Exec(`CREATE INDEX users_by_role ON users (role)`).Error; err != nil {
			t.Fatal(err)
		}
	})
	var exists bool
	if err := pgPool.admin.Write.Raw(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ?)`, schema).Scan(&exists).Error; err != nil {
		t.Fatal(err)
	}
	if exists {
		t.Errorf("schema %s, given back with an index added, still exists: want it dropped", schema)
	}
	t.Run("new", func(t *testing.T) {
		db, _ := NewPostgres(t)
		if got := currentSchema(t, db); got == schema {
			t.Fatalf("schema %s, dropped, was given out again", got)
		}
	})
}

func currentSchema(t *testing.T, db *store.DB) string {
	t.Helper()
	var s string
	if err := db.Read.Raw(`SELECT current_schema()`).Scan(&s).Error; err != nil {
		t.Fatal(err)
	}
	return s
}
