package store

import (
	"fmt"
	"math/bits"
	"strings"

	"gorm.io/gorm"
)

// Statements whose length varies with a batch (its IN lists, its multi-row
// inserts) come in power-of-two sizes, so that a few of each are kept prepared on
// SQLite's writer (stmtCache keeps at most maxCached) whatever the batch's size.

// InSet is the placeholders of an IN list for vals and its arguments, padded to a
// power of two by repeating the last value (which changes no IN test), so that
// lists of any length share a few statements kept prepared.
func InSet[T any](vals []T) (string, []any) {
	if len(vals) == 0 {
		return In(0), nil
	}
	n := 1 << bits.Len(uint(len(vals)-1))
	args := make([]any, n)
	for i := range n {
		args[i] = vals[min(i, len(vals)-1)]
	}
	return In(n), args
}

// InsertKept adds rows (each one value per column, in order) to table inside tx,
// in multi-row statements of power-of-two numbers of rows kept prepared on
// SQLite's writer (see stmtCache): a batch of any size is a few statements parsed
// once. It is for the small inserts of a group commit's batch; Insert is for bulk.
func InsertKept(tx *gorm.DB, table string, columns []string, rows [][]any) error {
	per := 1 << (bits.Len(uint(max(maxParams/len(columns), 1))) - 1) // the largest power of two that fits
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(columns)), ", ") + ")"
	head := "INSERT INTO " + table + " (" + strings.Join(columns, ", ") + ") VALUES "
	args := make([]any, 0, min(per, len(rows))*len(columns))
	for len(rows) > 0 {
		n := min(per, 1<<(bits.Len(uint(len(rows)))-1)) // the largest power of two not above what is left
		args = args[:0]
		for _, r := range rows[:n] {
			if len(r) != len(columns) {
				return fmt.Errorf("store: insert into %s: row has %d values for %d columns", table, len(r), len(columns))
			}
			args = append(args, r...)
		}
		if _, err := Exec(tx, head+strings.TrimSuffix(strings.Repeat(one+", ", n), ", "), args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// NextID is the id SQLite's next insert into table (an INTEGER PRIMARY KEY
// AUTOINCREMENT named id) would take, for a batch that inserts rows with ids it
// chose: they are NextID, NextID+1, ... Only inside a write transaction of SQLite,
// whose one writer inserts nothing else meanwhile; an AUTOINCREMENT id is never
// used again, so the sequence counts as well as the rows there are.
func NextID(tx *gorm.DB, table string) (int64, error) {
	var last int64
	err := ScanRow(tx, "SELECT MAX(COALESCE((SELECT seq FROM sqlite_sequence WHERE name = ?), 0), COALESCE((SELECT MAX(id) FROM "+table+"), 0))",
		[]any{table}, &last)
	return last + 1, err
}
