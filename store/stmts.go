package store

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"gorm.io/gorm"
)

// maxCached bounds the statements kept prepared on a SQLite writer: statements
// whose text varies (IN lists, multi-row inserts) come in a few lengths each.
const maxCached = 256

// stmtCache keeps statements prepared on SQLite's one writer connection across
// transactions. Neither mattn/go-sqlite3 nor gorm does: gorm's PrepareStmt prepares
// inside each transaction, and database/sql prepares a statement made inside a
// transaction again in the next one, so every placement parsed its eleven
// statements anew (a fifth of its time). A statement prepared on the *sql.DB is
// prepared on its connection once, and Tx.StmtContext reuses it in every later
// transaction on that connection.
//
// A statement is prepared outside any transaction, between two of the group
// commit's batches (prepareWanted): preparing on the *sql.DB inside a transaction
// would wait for the one connection the transaction holds. Until then it runs
// unprepared, through gorm.
//
// The read pool of a SQLite file keeps its statements too (eager): preparing one
// there waits for no one, so it is prepared when first run.
type stmtCache struct {
	db    *sql.DB
	eager bool // prepare on first use (a read pool), not between batches
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	want  map[string]bool
}

// caches maps a SQLite writer's *sql.DB to its statements, so that a statement
// run on any gorm session or transaction of the writer finds them.
var caches sync.Map // *sql.DB -> *stmtCache

func newStmtCache(db *sql.DB, eager bool) *stmtCache {
	c := &stmtCache{db: db, eager: eager, stmts: map[string]*sql.Stmt{}, want: map[string]bool{}}
	caches.Store(db, c)
	return c
}

// close forgets the cache and closes its statements, before the *sql.DB closes.
func (c *stmtCache) close() {
	caches.Delete(c.db)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.stmts {
		s.Close()
	}
	c.stmts, c.want = map[string]*sql.Stmt{}, map[string]bool{}
}

// lookup returns query's prepared statement, or nil after noting that it is wanted.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s := c.stmts[query]; s != nil {
		return s
	}
	if len(c.stmts)+len(c.want) >= maxCached {
		return nil
	}
	if !c.eager {
		c.want[query] = true
		return nil
	}
	s, err := c.db.Prepare(query)
	if err != nil {
		return nil // it runs unprepared, and its error shows there
	}
	c.stmts[query] = s
	return s
}

// prepareWanted prepares the statements run since the last call. The caller holds
// no transaction of the writer.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	if len(c.want) == 0 {
		c.mu.Unlock()
		return
	}
	want := make([]string, 0, len(c.want))
	for q := range c.want {
		want = append(want, q)
	}
	clear(c.want)
	c.mu.Unlock()
	for _, q := range want {
		s, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue // it runs unprepared, and its error shows there
		}
		c.mu.Lock()
		if c.stmts[q] == nil {
			c.stmts[q] = s
			s = nil
		}
		c.mu.Unlock()
		if s != nil {
			s.Close()
		}
	}
}

// cachedStmt returns tx's transaction-bound copy of query's statement prepared on
// the SQLite writer, or nil when there is none (PostgreSQL, whose driver pgx caches
// prepared statements on each connection itself; the read pool; a statement not
// prepared yet).
func cachedStmt(tx *gorm.DB, query string) (*sql.Stmt, context.Context) {
	ctx := tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	db, ok := tx.Config.ConnPool.(*sql.DB)
	if !ok {
		return nil, ctx
	}
	v, ok := caches.Load(db)
	if !ok {
		return nil, ctx
	}
	s := v.(*stmtCache).lookup(query)
	if s == nil {
		return nil, ctx
	}
	switch pool := tx.Statement.ConnPool.(type) {
	case *sql.Tx:
		return pool.StmtContext(ctx, s), ctx
	case *sql.DB:
		if pool == db {
			return s, ctx
		}
	}
	return nil, ctx
}

// Exec runs query (with ? placeholders) with args in tx and returns the rows it
// affected. On a SQLite writer the statement is prepared once and kept (see
// stmtCache); elsewhere it runs through gorm, which turns the placeholders into
// PostgreSQL's. Errors are translated as gorm translates its own (a unique key's
// violation is gorm.ErrDuplicatedKey). args are scalars: no slices for IN lists
// (In writes their placeholders).
func Exec(tx *gorm.DB, query string, args ...any) (int64, error) {
	s, ctx := cachedStmt(tx, query)
	if s == nil {
		res := tx.Exec(query, args...)
		return res.RowsAffected, res.Error
	}
	res, err := s.ExecContext(ctx, args...)
	if err != nil {
		return 0, translate(tx, err)
	}
	return res.RowsAffected()
}

// ScanRow runs query as Exec does and scans its first row into dest: sql.ErrNoRows
// when it returns none.
func ScanRow(tx *gorm.DB, query string, args []any, dest ...any) error {
	s, ctx := cachedStmt(tx, query)
	var row *sql.Row
	if s == nil {
		row = tx.Raw(query, args...).Row()
	} else {
		row = s.QueryRowContext(ctx, args...)
	}
	if err := row.Scan(dest...); err != nil {
		if err == sql.ErrNoRows {
			return err
		}
		return translate(tx, err)
	}
	return nil
}

// QueryRows runs query as ScanRow does and calls each for every row it returns.
func QueryRows(tx *gorm.DB, query string, args []any, each func(*sql.Rows) error) error {
	s, ctx := cachedStmt(tx, query)
	var rs *sql.Rows
	var err error
	if s == nil {
		rs, err = tx.Raw(query, args...).Rows()
	} else {
		rs, err = s.QueryContext(ctx, args...)
	}
	if err != nil {
		return translate(tx, err)
	}
	defer rs.Close()
	for rs.Next() {
		if err := each(rs); err != nil {
			return err
		}
	}
	return translate(tx, rs.Err())
}

// In is the placeholders of an IN list of n values, "(?, ?, ?)", for Exec and
// ScanRow, whose statements take no slices.
func In(n int) string {
	if n <= 0 {
		return "(NULL)"
	}
	return "(" + strings.Repeat("?, ", n-1) + "?)"
}

// translate turns a driver's error into gorm's, as gorm does for its own statements.
func translate(tx *gorm.DB, err error) error {
	if t, ok := tx.Dialector.(gorm.ErrorTranslator); ok && err != nil && tx.Config.TranslateError {
		return t.Translate(err)
	}
	return err
}
