package ledger_test

import (
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

// An amount too large says so in words people read: never the integer type's
// range ("±9,223,372,036,854.775807").
func TestTooLargeAnAmountSaysTheLimitInWords(t *testing.T) {
	t.Parallel()
	_, err := ledger.ParseMoney("99,999,999,999,999")
	msg := clearhouse.ErrorMessage(err)
	if err == nil || !strings.Contains(msg, "about $9.2 trillion") || strings.Contains(msg, "9,223,372") || strings.Contains(msg, "±") {
		t.Fatalf("parsing a huge amount: %q", msg)
	}
	_, err = ledger.MaxMoney.Add(1)
	if msg := clearhouse.ErrorMessage(err); !strings.Contains(msg, "too large to add") || strings.Contains(msg, "9,223,372") {
		t.Fatalf("adding past the limit: %q", msg)
	}
}

// A point needs digits on both sides, and the refusal says what to write instead.
func TestALonePointSaysWhatToWrite(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{".5": "write 0.5", "$.25": "write 0.25", "1.": "write 1 or 1.0", "$1,000.": "write 1,000 or 1,000.0"} {
		_, err := ledger.ParseMoney(in)
		if msg := clearhouse.ErrorMessage(err); clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(msg, want) {
			t.Errorf("ParseMoney(%q): %q, want it to say %q", in, msg, want)
		}
	}
}
