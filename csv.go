package clearhouse

import "time"

// CSVText makes a text cell of a CSV export safe to open in a spreadsheet (OWASP's
// "CSV injection" advice): a cell that begins with =, +, -, @, a tab or a carriage
// return would be read as a formula, so it gets a single quote in front; every other
// cell is returned as it is. Every CSV export applies it to its text columns (memos,
// references, names, keys, bundles) and never to numeric columns, so amounts such as
// "-12.50" stay numbers.
func CSVText(cell string) string {
	if cell == "" {
		return cell
	}
	switch cell[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + cell
	}
	return cell
}

// CSVTime is a timestamp cell of a CSV export, in the one format every export uses
// and spreadsheets parse: RFC 3339 in UTC, to the whole second
// (2026-03-01T14:05:09Z). Sub-second digits are dropped, never rounded up, so a
// cell never names a later second than the event.
func CSVTime(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}
