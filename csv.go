package clearhouse

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
