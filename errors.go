// Package clearhouse holds what every other package of the market shares: the
// error codes that domain code returns and the web layer maps to HTTP statuses.
package clearhouse

import (
	"errors"
	"fmt"
)

// Error codes. Domain code returns an *Error with one of these; web maps each to one
// HTTP status in one place.
const (
	ECONFLICT       = "conflict"      // the request conflicts with current state (duplicate key, replay with other content)
	EINTERNAL       = "internal"      // a failure the caller cannot fix; logged, never shown in detail
	EINVALID        = "invalid"       // the input breaks a rule; the message names the field and the rule
	ENOTFOUND       = "not_found"     // the named thing does not exist
	EUNAUTHORIZED   = "unauthorized"  // no valid identity
	EFORBIDDEN      = "forbidden"     // an identity, but not allowed to do this
	EUNPROCESSABLE  = "unprocessable" // well-formed, valid input the current state cannot satisfy (e.g. insufficient funds)
	ENOTIMPLEMENTED = "not_implemented"
)

// Error is a domain error: a code from the set above and a message that is safe to
// show to the user who caused it.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string {
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code string, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, EINTERNAL for any
// other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the safe message of the first *Error in err's chain, and a
// generic message for any other non-nil error (whose detail must not reach users).
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	} else if errors.As(err, &e) {
		return e.Message
	}
	return "Internal error."
}
