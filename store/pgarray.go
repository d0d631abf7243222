package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
)

// minArrayRows is the fewest rows Insert sends to PostgreSQL as column arrays
// (INSERT ... SELECT FROM unnest): fewer (placing an order) keep the multi-row
// statement pgx has prepared.
const minArrayRows = 200

// maxArrayRows bounds the rows of one unnest insert, so that one statement's
// arrays stay a few megabytes. A variable only for the tests (SetMaxArrayRows).
var maxArrayRows = 100_000

// BigintArray is ids as a PostgreSQL array literal ('{1,2,3}'), to pass as one
// parameter (CAST(? AS BIGINT[])): gorm would expand a slice into one parameter
// per element, and PostgreSQL plans an IN list of a thousand parameters far
// worse than = ANY of one array.
func BigintArray(ids []int64) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, '}'))
}

// TextArray is texts as a PostgreSQL array literal ('{"a","b"}'), to pass as one
// parameter (CAST(? AS TEXT[])), as BigintArray.
func TextArray(texts []string) string {
	esc := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	var sb strings.Builder
	sb.WriteByte('{')
	for i, t := range texts {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteByte('"')
		sb.WriteString(esc.Replace(t))
		sb.WriteByte('"')
	}
	sb.WriteByte('}')
	return sb.String()
}

// columnArrays turns rows into one typed slice per column, with its PostgreSQL
// type, for pgx to send each as one binary array. ok is false when a column's
// values are not all of one supported kind (integers, strings, floats, bools,
// times, or pointers to int64 or float64, nil for NULL).
func columnArrays(columns []string, rows [][]any) (types []string, arrays []any, ok bool) {
	types = make([]string, len(columns))
	arrays = make([]any, len(columns))
	for j := range columns {
		switch rows[0][j].(type) {
		case int, int64, int32:
			a := make([]int64, len(rows))
			for i, r := range rows {
				switch v := r[j].(type) {
				case int:
					a[i] = int64(v)
				case int64:
					a[i] = v
				case int32:
					a[i] = int64(v)
				default:
					return nil, nil, false
				}
			}
			types[j], arrays[j] = "BIGINT", a
		case *int64:
			a := make([]*int64, len(rows))
			for i, r := range rows {
				v, isPtr := r[j].(*int64)
				if !isPtr {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "BIGINT", a
		case *float64:
			a := make([]*float64, len(rows))
			for i, r := range rows {
				v, isPtr := r[j].(*float64)
				if !isPtr {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "DOUBLE PRECISION", a
		case string:
			a := make([]string, len(rows))
			for i, r := range rows {
				v, isStr := r[j].(string)
				if !isStr {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "TEXT", a
		case float64:
			a := make([]float64, len(rows))
			for i, r := range rows {
				v, isFloat := r[j].(float64)
				if !isFloat {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "DOUBLE PRECISION", a
		case bool:
			a := make([]bool, len(rows))
			for i, r := range rows {
				v, isBool := r[j].(bool)
				if !isBool {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "BOOLEAN", a
		case time.Time:
			a := make([]time.Time, len(rows))
			for i, r := range rows {
				v, isTime := r[j].(time.Time)
				if !isTime {
					return nil, nil, false
				}
				a[i] = v
			}
			types[j], arrays[j] = "TIMESTAMPTZ", a
		default:
			return nil, nil, false
		}
	}
	return types, arrays, true
}

// insertArrays inserts rows into table on PostgreSQL with one INSERT ... SELECT
// FROM unnest(...) per maxArrayRows rows, each column one array parameter: the
// server parses and plans one small statement rather than one of ten thousand
// parameters per few thousand rows. Rows are inserted (and ids returned) in the
// rows' order. ok is false (nothing done) when the values do not fit columnArrays,
// in any chunk: every chunk's arrays are made before the first is sent.
func insertArrays(tx *gorm.DB, table string, columns []string, rows [][]any, returning string) (ids []int64, ok bool, err error) {
	if _, _, fits := columnArrays(columns, rows[:1]); !fits {
		return nil, false, nil
	}
	type chunk struct {
		n      int
		types  []string
		arrays []any
	}
	var chunks []chunk
	for part := range slices.Chunk(rows, maxArrayRows) {
		types, arrays, fits := columnArrays(columns, part)
		if !fits {
			return nil, false, nil
		}
		chunks = append(chunks, chunk{len(part), types, arrays})
	}
	pool := tx.Statement.ConnPool
	ctx := tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	for _, c := range chunks {
		types, arrays := c.types, c.arrays
		casts := make([]string, len(columns))
		for j, t := range types {
			casts[j] = fmt.Sprintf("CAST($%d AS %s[])", j+1, t)
		}
		q := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") SELECT * FROM unnest(" + strings.Join(casts, ", ") + ")"
		if returning == "" {
			if _, err := pool.ExecContext(ctx, q, arrays...); err != nil {
				return nil, true, translate(tx, err)
			}
			continue
		}
		// WITH ORDINALITY numbers the rows as unnest produces them; the ids are
		// returned with that number, so their order does not rest on RETURNING's.
		names := make([]string, len(columns))
		for j := range columns {
			names[j] = fmt.Sprintf("c%d", j)
		}
		q = "WITH v AS (SELECT * FROM unnest(" + strings.Join(casts, ", ") + ") WITH ORDINALITY AS v (" + strings.Join(names, ", ") + ", n)), " +
			"ins AS (INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") SELECT " + strings.Join(names, ", ") + " FROM v ORDER BY n RETURNING " + returning + ") " +
			"SELECT " + returning + " FROM ins ORDER BY " + returning
		rs, err := pool.QueryContext(ctx, q, arrays...)
		if err != nil {
			return nil, true, translate(tx, err)
		}
		got, err := scanIDs(rs, c.n)
		if err != nil {
			return nil, true, translate(tx, err)
		}
		ids = append(ids, got...)
	}
	return ids, true, nil
}

func scanIDs(rs *sql.Rows, n int) ([]int64, error) {
	defer rs.Close()
	got := make([]int64, 0, n)
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, err
		}
		got = append(got, id)
	}
	return got, rs.Err()
}

// ExecArrays runs q ($1, $2, ... placeholders: PostgreSQL's) inside tx with args
// passed to pgx as they are, so that a slice ([]int64, []string, []*int64, ...)
// is one array parameter, and returns the rows it affected. For PostgreSQL only.
func ExecArrays(tx *gorm.DB, q string, args ...any) (int64, error) {
	if tx.Dialector.Name() != Postgres {
		return 0, fmt.Errorf("store: ExecArrays is for PostgreSQL, not %s", tx.Dialector.Name())
	}
	ctx := tx.Statement.Context
	if ctx == nil {
		ctx = context.Background()
	}
	res, err := tx.Statement.ConnPool.ExecContext(ctx, q, args...)
	if err != nil {
		return 0, translate(tx, err)
	}
	return res.RowsAffected()
}
