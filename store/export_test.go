package store

// SetMaxArrayRows sets the rows of one unnest insert on PostgreSQL until the
// returned func restores it, so that a test can make several chunks of a few rows.
func SetMaxArrayRows(n int) (restore func()) {
	old := maxArrayRows
	maxArrayRows = n
	return func() { maxArrayRows = old }
}

// ColumnArraysFit says whether rows go to PostgreSQL as one array per column
// (columnArrays), rather than as a multi-row statement.
func ColumnArraysFit(columns []string, rows [][]any) bool {
	_, _, ok := columnArrays(columns, rows)
	return ok
}
