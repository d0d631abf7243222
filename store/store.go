// Package store opens Clearhouse's database: SQLite (the embedded default) or
// PostgreSQL (for organizations that outgrow one machine), chosen by one DSN, and
// applies the versioned migrations embedded in the binary.
//
// SQLite always runs in WAL mode with foreign keys on, a busy timeout, transactions
// that take the write lock up front (BEGIN IMMEDIATE) and one writer connection; reads
// go through a separate read-only pool so they never wait for the writer.
package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/driver/postgres"
	"gorm.io/driver/sqlite"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
)

// The dialects Open understands.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

// DB is an open database. Write serializes writers (SQLite has one writer
// connection whose transactions begin IMMEDIATE); Read is for queries that change
// nothing. On PostgreSQL both are the same pool.
type DB struct {
	Write   *gorm.DB
	Read    *gorm.DB
	Dialect string // SQLite or Postgres

	closers []*sql.DB
	grp     group      // Grouped's batches (SQLite)
	stmts   *stmtCache // statements kept prepared on the SQLite writer
	reads   *stmtCache // and on its read pool
	lock    *os.File   // the in-use lock of a SQLite file (HoldInUse), released by Close
}

// Open connects to dsn: a postgres:// or postgresql:// URL, or else a SQLite file
// path (optionally "sqlite:" or "file:" prefixed; ":memory:" for a private in-memory
// database). It does not migrate; see Migrate and CheckCurrent. Returns EINVALID for
// a DSN it cannot use.
func Open(ctx context.Context, dsn string) (*DB, error) {
	dsn = strings.TrimSpace(dsn)
	if dsn == "" {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "db: empty database address")
	}
	var db *DB
	var err error
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		db, err = openPostgres(dsn)
	} else {
		db, err = openSQLite(dsn)
	}
	if err != nil {
		return nil, err
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, c := range db.closers {
		if err := c.PingContext(pingCtx); err != nil {
			db.Close()
			return nil, fmt.Errorf("db: connecting to %s: %w", Redact(dsn), err)
		}
	}
	return db, nil
}

func gormConfig() *gorm.Config {
	return &gorm.Config{
		TranslateError:         true,
		SkipDefaultTransaction: true,
		Logger:                 logger.Discard,
		NowFunc:                func() time.Time { return time.Now().UTC() },
	}
}

func openPostgres(dsn string) (*DB, error) {
	g, err := gorm.Open(postgres.Open(dsn), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("db: opening %s: %w", Redact(dsn), err)
	}
	sqlDB, err := g.DB()
	if err != nil {
		return nil, err
	}
	sqlDB.SetMaxOpenConns(20)
	sqlDB.SetMaxIdleConns(10)
	sqlDB.SetConnMaxIdleTime(5 * time.Minute)
	return &DB{Write: g, Read: g, Dialect: Postgres, closers: []*sql.DB{sqlDB}}, nil
}

// sqliteParams are mattn/go-sqlite3's connection parameters for every connection.
// synchronous=FULL makes each commit durable (WAL is fsynced at commit).
const sqliteParams = "_journal_mode=WAL&_foreign_keys=on&_busy_timeout=10000&_synchronous=FULL&_cache_size=-65536"

func openSQLite(dsn string) (*DB, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(dsn, "sqlite:"), "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "db: SQLite options are fixed by Clearhouse; give only the file path, not %q", path[i:])
	}
	if path == ":memory:" {
		// One connection serves both: a second connection would see another database.
		g, err := gorm.Open(sqlite.Open("file::memory:?"+sqliteParams+"&_txlock=immediate"), gormConfig())
		if err != nil {
			return nil, err
		}
		sqlDB, _ := g.DB()
		sqlDB.SetMaxOpenConns(1)
		sqlDB.SetConnMaxIdleTime(0)
		sqlDB.SetConnMaxLifetime(0)
		return &DB{Write: g, Read: g, Dialect: SQLite, closers: []*sql.DB{sqlDB}, stmts: newStmtCache(sqlDB, false)}, nil
	}
	u := "file:" + (&url.URL{Path: path}).EscapedPath()
	w, err := gorm.Open(sqlite.Open(u+"?"+sqliteParams+"&_txlock=immediate"), gormConfig())
	if err != nil {
		return nil, fmt.Errorf("db: opening %s: %w", path, err)
	}
	wDB, _ := w.DB()
	wDB.SetMaxOpenConns(1)
	wDB.SetMaxIdleConns(1)
	wDB.SetConnMaxIdleTime(0)
	wDB.SetConnMaxLifetime(0)
	// Touch the file through the writer first so that it exists (and is in WAL mode)
	// before the read-only pool opens it.
	if err := wDB.Ping(); err != nil {
		wDB.Close()
		return nil, fmt.Errorf("db: opening %s: %w", path, err)
	}
	r, err := gorm.Open(sqlite.Open(u+"?"+sqliteParams+"&mode=ro&_query_only=1"), gormConfig())
	if err != nil {
		wDB.Close()
		return nil, fmt.Errorf("db: opening %s: %w", path, err)
	}
	rDB, _ := r.DB()
	rDB.SetMaxOpenConns(8)
	rDB.SetMaxIdleConns(8)
	return &DB{Write: w, Read: r, Dialect: SQLite, closers: []*sql.DB{wDB, rDB}, stmts: newStmtCache(wDB, false), reads: newStmtCache(rDB, true)}, nil
}

// Close closes every connection. Callers stop their writers first.
func (db *DB) Close() error {
	var first error
	for _, c := range []*stmtCache{db.stmts, db.reads} {
		if c != nil {
			c.close()
		}
	}
	for _, c := range db.closers {
		if err := c.Close(); err != nil && first == nil {
			first = err
		}
	}
	if db.lock != nil {
		if err := db.lock.Close(); err != nil && first == nil {
			first = err
		}
		db.lock = nil
	}
	return first
}

// SQL returns the writer's *sql.DB, for tools (migrations) that need it.
func (db *DB) SQL() *sql.DB {
	s, _ := db.Write.DB()
	return s
}

// Redact returns dsn fit to print or log: the password of a URL's user, and the
// value of any password parameter (in a URL's query or a key=value connection
// string), become "xxxxx". It never fails: a URL it cannot parse has everything
// between "//" and its last "@" hidden. Every place that shows a DSN uses it.
func Redact(dsn string) string {
	const hidden = "xxxxx"
	out := dsn
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), hidden)
			out = u.String()
		}
	} else if err != nil {
		if i := strings.Index(dsn, "//"); i >= 0 {
			if at := strings.LastIndex(dsn[i+2:], "@"); at >= 0 {
				out = dsn[:i+2] + hidden + dsn[i+2+at:]
			}
		}
	}
	return passwordParam.ReplaceAllString(out, "${1}"+hidden)
}

// passwordParam matches a password parameter's value: "password=..." in a URL query
// (up to the next & or #) or a key=value string (quoted, or up to the next space).
var passwordParam = regexp.MustCompile(`(?i)(\bpassword\s*=\s*)('(?:[^'\\]|\\.)*'|[^&#\s]*)`)

// Exclusive runs fn unless another process holds the lock named key, and reports
// whether it ran. On PostgreSQL it takes a session advisory lock, so that of
// several replicas sharing one database only one runs a scheduled job at a time; on
// SQLite, whose file belongs to one server, it simply runs fn.
func (db *DB) Exclusive(ctx context.Context, key int64, fn func() error) (bool, error) {
	if db.Dialect != Postgres {
		return true, fn()
	}
	conn, err := db.SQL().Conn(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	var got bool
	if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&got); err != nil {
		return false, err
	}
	if !got {
		return false, nil
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", key)
	return true, fn()
}
