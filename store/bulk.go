package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// maxParams bounds the parameters of one bulk statement, well under SQLite's
// 32,766 variables and PostgreSQL's 65,535 parameters.
const maxParams = 10_000

// maxCachedParams bounds the inserts whose statements are kept prepared on a
// SQLite writer (stmtCache): the small ones that run again and again.
const maxCachedParams = 256

// Insert adds rows (each one value per column, in order) to table in multi-row
// statements of at most maxParams parameters, inside tx. With returning set (a
// column, "id"), it returns that column of each inserted row, in the rows' order.
// It spends no reflection per row, unlike gorm's CreateInBatches: settlement of a
// large auction inserts hundreds of thousands of rows with it. On PostgreSQL, from
// minArrayRows rows, each column goes as one array (insertArrays). On SQLite the
// statement of a full chunk is prepared once and run for every full chunk (parsing
// a statement of ten thousand parameters costs about as much as running it).
func Insert(tx *gorm.DB, table string, columns []string, rows [][]any, returning string) ([]int64, error) {
	if len(rows) == 0 {
		return nil, nil
	}
	for _, r := range rows {
		if len(r) != len(columns) {
			return nil, fmt.Errorf("store: insert into %s: row has %d values for %d columns", table, len(r), len(columns))
		}
	}
	if tx.Dialector.Name() == Postgres && len(rows) >= minArrayRows {
		if ids, ok, err := insertArrays(tx, table, columns, rows, returning); ok {
			return ids, err
		}
	}
	per := max(maxParams/len(columns), 1)
	var ids []int64
	if returning != "" {
		ids = make([]int64, 0, len(rows))
	}
	// A statement run once is not worth preparing apart (placing an order inserts a
	// few rows): only inserts of more than one full chunk reuse a prepared one.
	stmts := insertStatements{tx: tx, table: table, columns: columns, returning: returning, reuse: len(rows) > per}
	defer stmts.close()
	args := make([]any, 0, min(per, len(rows))*len(columns))
	for part := range slices.Chunk(rows, per) {
		args = args[:0]
		for _, r := range part {
			args = append(args, r...)
		}
		got, err := stmts.run(len(part), args)
		if err != nil {
			return nil, err
		}
		if returning != "" {
			if len(got) != len(part) {
				return nil, fmt.Errorf("store: insert into %s returned %d ids for %d rows", table, len(got), len(part))
			}
			ids = append(ids, got...)
		}
	}
	return ids, nil
}

// insertStatements runs one Insert's multi-row statements: through gorm on
// PostgreSQL (pgx caches each distinct statement on the server) and for an insert
// of one chunk, and otherwise on SQLite through statements prepared once per
// number of rows.
type insertStatements struct {
	tx        *gorm.DB
	table     string
	columns   []string
	returning string
	reuse     bool // prepare statements on SQLite
	prepared  map[int]*sql.Stmt
}

// text is the statement inserting n rows.
func (s *insertStatements) text(n int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(s.columns)), ", ") + ")"
	var sb strings.Builder
	sb.Grow(40 + len(s.table) + n*(len(one)+2))
	sb.WriteString("INSERT INTO " + s.table + " (" + strings.Join(s.columns, ", ") + ") VALUES ")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(one)
	}
	if s.returning != "" {
		sb.WriteString(" RETURNING " + s.returning)
	}
	return sb.String()
}

// run inserts n rows whose values are args, returning the returning column.
func (s *insertStatements) run(n int, args []any) ([]int64, error) {
	preparer, ok := s.tx.Statement.ConnPool.(interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	})
	var stmt *sql.Stmt
	ctx := s.tx.Statement.Context
	if s.tx.Dialector.Name() != Postgres && ok && !s.reuse && len(args) <= maxCachedParams {
		// A small insert (placing an order's bundles) runs as a statement kept
		// prepared on the writer, when there is one.
		stmt, ctx = cachedStmt(s.tx, s.text(n))
	}
	if stmt == nil && (s.tx.Dialector.Name() == Postgres || !ok || !s.reuse) {
		if s.returning == "" {
			return nil, s.tx.Exec(s.text(n), args...).Error
		}
		var got []int64
		err := s.tx.Raw(s.text(n), args...).Scan(&got).Error
		return got, err
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if stmt == nil {
		stmt = s.prepared[n]
	}
	if stmt == nil {
		var err error
		if stmt, err = preparer.PrepareContext(ctx, s.text(n)); err != nil {
			return nil, s.translate(err)
		}
		if s.prepared == nil {
			s.prepared = map[int]*sql.Stmt{}
		}
		s.prepared[n] = stmt
	}
	if s.returning == "" {
		_, err := stmt.ExecContext(ctx, args...)
		return nil, s.translate(err)
	}
	rs, err := stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	got, err := scanIDs(rs, n)
	return got, s.translate(err)
}

// translate turns a driver's error into gorm's (a unique key's violation into
// gorm.ErrDuplicatedKey) as gorm does for its own statements.
func (s *insertStatements) translate(err error) error { return translate(s.tx, err) }

func (s *insertStatements) close() {
	for _, stmt := range s.prepared {
		stmt.Close()
	}
}

// ExecEach runs one statement (with ? placeholders: SQLite's) once per row of
// arguments inside tx, prepared once, and returns the rows it affected in all. For
// SQLite, in process, a prepared statement per row is cheaper than any join.
func ExecEach(ctx context.Context, tx *gorm.DB, query string, rows [][]any) (int64, error) {
	if len(rows) == 0 {
		return 0, nil
	}
	preparer, ok := tx.Statement.ConnPool.(interface {
		PrepareContext(context.Context, string) (*sql.Stmt, error)
	})
	if !ok {
		return 0, fmt.Errorf("store: %T cannot prepare statements", tx.Statement.ConnPool)
	}
	stmt, err := preparer.PrepareContext(ctx, query)
	if err != nil {
		return 0, err
	}
	defer stmt.Close()
	var n int64
	for _, args := range rows {
		res, err := stmt.ExecContext(ctx, args...)
		if err != nil {
			return n, err
		}
		k, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += k
	}
	return n, nil
}

// Column is a column UpdateRows reads from its rows: its name and its
// PostgreSQL type (the type of the VALUES list's column).
type Column struct {
	Name string
	Type string // BIGINT, TEXT, TIMESTAMPTZ, ...
}

// UpdateRows sets the set columns of table's rows whose key columns equal each
// row's first len(key) values, to the row's remaining values, inside tx, and
// returns the rows it affected. On PostgreSQL it takes one statement per
// thousand rows (UPDATE ... FROM VALUES), so a write under a lock makes one
// round trip per table, not one per row; on SQLite, in process, one prepared
// statement per row (ExecEach), which is cheaper there than any join.
func UpdateRows(ctx context.Context, tx *gorm.DB, table string, key, set []Column, rows [][]any) (int64, error) {
	width := len(key) + len(set)
	for _, r := range rows {
		if len(r) != width {
			return 0, fmt.Errorf("store: update of %s: row has %d values for %d columns", table, len(r), width)
		}
	}
	if len(rows) == 0 || len(set) == 0 {
		return 0, nil
	}
	if tx.Dialector.Name() != Postgres {
		var q strings.Builder
		q.WriteString("UPDATE " + table + " SET ")
		for i, c := range set {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(c.Name + " = ?")
		}
		for i, c := range key {
			if i == 0 {
				q.WriteString(" WHERE ")
			} else {
				q.WriteString(" AND ")
			}
			q.WriteString(c.Name + " = ?")
		}
		each := make([][]any, len(rows))
		for i, r := range rows {
			each[i] = append(append(make([]any, 0, width), r[len(key):]...), r[:len(key)]...)
		}
		return ExecEach(ctx, tx, q.String(), each)
	}
	cols := append(append(make([]Column, 0, width), key...), set...)
	one := make([]string, width)
	names := make([]string, width)
	for i, c := range cols {
		one[i] = "CAST(? AS " + c.Type + ")"
		names[i] = c.Name
	}
	head := "UPDATE " + table + " SET "
	for i, c := range set {
		if i > 0 {
			head += ", "
		}
		head += c.Name + " = v." + c.Name
	}
	head += " FROM (VALUES "
	tail := ") AS v (" + strings.Join(names, ", ") + ") WHERE "
	for i, c := range key {
		if i > 0 {
			tail += " AND "
		}
		tail += table + "." + c.Name + " = v." + c.Name
	}
	var n int64
	for part := range slices.Chunk(rows, min(1000, max(maxParams/width, 1))) {
		var q strings.Builder
		q.WriteString(head)
		args := make([]any, 0, len(part)*width)
		for i, r := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + strings.Join(one, ", ") + ")")
			args = append(args, r...)
		}
		q.WriteString(tail)
		res := tx.WithContext(ctx).Exec(q.String(), args...)
		if res.Error != nil {
			return n, res.Error
		}
		n += res.RowsAffected
	}
	return n, nil
}

// Analyze refreshes PostgreSQL's planner statistics of tables, so that statements
// over a table that grew fast since autovacuum last looked (an auction's orders
// during its bid window) use their indexes; without it, a plan made for a few
// hundred rows scans a hundred thousand per statement. SQLite needs none.
func (db *DB) Analyze(ctx context.Context, tables ...string) error {
	if db.Dialect != Postgres || len(tables) == 0 {
		return nil
	}
	return db.Write.WithContext(ctx).Exec("ANALYZE " + strings.Join(tables, ", ")).Error
}

// Exists returns ENOTFOUND with the message format (and args) unless table has a
// row whose id is id, read inside tx.
func Exists(tx *gorm.DB, table, id, format string, args ...any) error {
	var n int64
	if err := tx.Table(table).Where("id = ?", id).Count(&n).Error; err != nil {
		return err
	}
	if n == 0 {
		return clearhouse.Errorf(clearhouse.ENOTFOUND, format, args...)
	}
	return nil
}
