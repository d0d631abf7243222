package templates

import (
	"fmt"
	"net/http"
)

func statusText(status int) string {
	return fmt.Sprintf("%d %s", status, http.StatusText(status))
}

func inputType(t string) string {
	if t == "" {
		return "text"
	}
	return t
}

func pluralFields(n int) string {
	if n == 1 {
		return "field"
	}
	return fmt.Sprintf("%d fields", n)
}

func itoa(n int) string { return fmt.Sprint(n) }

func i64(n int64) string { return fmt.Sprint(n) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
