package store

// SetMaxArrayRows sets the rows of one unnest insert on PostgreSQL until the
// returned func restores it, so that a test can make several chunks of a few rows.
func SetMaxArrayRows(n int) (restore func()) {
	old := maxArrayRows
	maxArrayRows = n
	return func() { maxArrayRows = old }
}
