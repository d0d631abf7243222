package store

import "database/sql"

// Pools names the connection pools of db for statistics: "write" and "read" on a
// SQLite file, "sqlite" for a private in-memory database, "postgres" on PostgreSQL.
func (db *DB) Pools() map[string]*sql.DB {
	switch {
	case db.Dialect == Postgres:
		return map[string]*sql.DB{"postgres": db.closers[0]}
	case len(db.closers) == 2:
		return map[string]*sql.DB{"write": db.closers[0], "read": db.closers[1]}
	default:
		return map[string]*sql.DB{"sqlite": db.closers[0]}
	}
}
