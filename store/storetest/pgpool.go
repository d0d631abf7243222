package storetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"testing"

	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// The PostgreSQL schemas of a test binary are pooled: NewPostgres migrates a new
// schema only when every schema the binary made so far is in use, and when a test
// ends it rewinds its schema to the freshly migrated state (a snapshot taken just
// after the migration, as Rewinder does) and gives it to the next test. Migrating
// is about 200 statements of DDL, 1 to 5 s of PostgreSQL's CPU a schema on the
// shared 2-core machine; a rewind is a few deletes and inserts. A schema whose
// shape a test changed (a migration rolled back, a table altered), or whose rewind
// failed, is dropped instead.
//
// A binary's schemas are named tp_<owner>_<n>; the binary holds a session advisory
// lock on its owner number for as long as it runs, on a connection of its own. Go's
// testing has no hook after a package's last test without a TestMain, so the
// schemas outlive their binary; the next binary to start drops those whose owner
// lock it can take (their binary has exited). Lock class pgPoolLockClass keeps
// these locks apart from goose's and the application's.
const pgPoolLockClass = 0x43485450 // "CHTP"

var pgPool struct {
	once  sync.Once
	err   error
	admin *store.DB // for creating, rewinding and dropping schemas
	owner int32
	lock  *sql.Conn // holds the owner lock

	mu   sync.Mutex
	n    int         // schemas made so far
	free []*pgPooled // schemas ready for a test
}

// A pgPooled schema and the snapshot of it freshly migrated.
type pgPooled struct {
	schema string
	snap   *snapshot
}

var pgPoolSchema = regexp.MustCompile(`^tp_(-?[0-9]+)_[0-9]+$`)

// pgPoolStart opens the pool's connections on base and takes an owner number,
// then drops the schemas of binaries that have exited.
func pgPoolStart(base string) error {
	pgPool.once.Do(func() { pgPool.err = startPool(base) })
	return pgPool.err
}

func startPool(base string) error {
	ctx := context.Background()
	admin, err := store.Open(ctx, base)
	if err != nil {
		return err
	}
	conn, err := admin.SQL().Conn(ctx)
	if err != nil {
		return errors.Join(err, admin.Close())
	}
	for {
		var b [4]byte
		_, _ = rand.Read(b[:])
		owner := int32(binary.BigEndian.Uint32(b[:]))
		var got bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, pgPoolLockClass, owner).Scan(&got); err != nil {
			return errors.Join(err, conn.Close(), admin.Close())
		}
		if got {
			pgPool.admin, pgPool.owner, pgPool.lock = admin, owner, conn
			break
		}
	}
	// The schemas of exited binaries.
	var schemas []string
	if err := admin.Write.Raw(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'tp\_%' ORDER BY 1`).Scan(&schemas).Error; err != nil {
		return err
	}
	owners := map[int32][]string{}
	for _, s := range schemas {
		m := pgPoolSchema.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		o, err := strconv.ParseInt(m[1], 10, 32)
		if err != nil || int32(o) == pgPool.owner {
			continue
		}
		owners[int32(o)] = append(owners[int32(o)], s)
	}
	for o, ss := range owners {
		var got bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2)`, pgPoolLockClass, o).Scan(&got); err != nil {
			return err
		}
		if !got {
			continue // its binary still runs
		}
		for _, s := range ss {
			if err := admin.Write.Exec("DROP SCHEMA IF EXISTS " + quoteIdent(s) + " CASCADE").Error; err != nil {
				return fmt.Errorf("dropping %s, left by an exited test binary: %w", s, err)
			}
		}
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, pgPoolLockClass, o); err != nil {
			return err
		}
	}
	return nil
}

// pgTake returns a free pooled schema, or a new empty schema's name (p.snap nil)
// for the caller to migrate.
func pgTake() (*pgPooled, error) {
	pgPool.mu.Lock()
	if n := len(pgPool.free); n > 0 {
		p := pgPool.free[n-1]
		pgPool.free = pgPool.free[:n-1]
		pgPool.mu.Unlock()
		return p, nil
	}
	pgPool.n++
	p := &pgPooled{schema: fmt.Sprintf("tp_%d_%d", pgPool.owner, pgPool.n)}
	pgPool.mu.Unlock()
	if err := pgPool.admin.Write.Exec("CREATE SCHEMA " + quoteIdent(p.schema)).Error; err != nil {
		return nil, fmt.Errorf("creating schema: %w", err)
	}
	return p, nil
}

// pgGiveBack rewinds p's schema to its snapshot and frees it for the next test,
// or drops it when it cannot be rewound (no snapshot: the test failed before one
// was taken; a changed shape; an error).
func pgGiveBack(t testing.TB, p *pgPooled) {
	if p.snap != nil {
		err := pgPool.admin.Write.Transaction(func(tx *gorm.DB) error {
			if err := tx.Exec("SET LOCAL search_path TO " + quoteIdent(p.schema)).Error; err != nil {
				return err
			}
			return p.snap.restore(tx)
		})
		if err == nil {
			pgPool.mu.Lock()
			pgPool.free = append(pgPool.free, p)
			pgPool.mu.Unlock()
			return
		}
		if !errors.Is(err, errShapeChanged) {
			t.Logf("storetest: rewinding schema %s for the next test failed, dropping it: %v", p.schema, err)
		}
	}
	if err := pgPool.admin.Write.Exec("DROP SCHEMA " + quoteIdent(p.schema) + " CASCADE").Error; err != nil {
		t.Logf("storetest: dropping schema %s: %v", p.schema, err)
	}
}
