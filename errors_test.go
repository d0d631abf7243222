package clearhouse_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/clearhouse/clearhouse"
)

func TestErrorCodeAndMessageFollowTheChain(t *testing.T) {
	inner := clearhouse.Errorf(clearhouse.EINVALID, "limit: must be a number, got %q", "abc")
	wrapped := fmt.Errorf("placing order: %w", inner)
	if got := clearhouse.ErrorCode(wrapped); got != clearhouse.EINVALID {
		t.Fatalf("ErrorCode = %q, want %q", got, clearhouse.EINVALID)
	}
	if got := clearhouse.ErrorMessage(wrapped); got != `limit: must be a number, got "abc"` {
		t.Fatalf("ErrorMessage = %q", got)
	}
	plain := errors.New("disk on fire")
	if clearhouse.ErrorCode(plain) != clearhouse.EINTERNAL || clearhouse.ErrorMessage(plain) == "disk on fire" {
		t.Fatal("a plain error must map to EINTERNAL with a generic message")
	}
	if clearhouse.ErrorCode(nil) != "" || clearhouse.ErrorMessage(nil) != "" {
		t.Fatal("nil must map to empty code and message")
	}
}
