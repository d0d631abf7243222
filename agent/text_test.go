package agent

import (
	"encoding/json"
	"strings"
	"testing"
)

// The server's answer about ends it did not apply is decoded and printed: a refused
// end with its reason (an already-ended one is a retry's echo and says nothing new).
func TestAnswerTextSaysWhyAnEndWasRefused(t *testing.T) {
	var a Answer
	body := `{"moved":[],"at_risk":[],"ended":[4],"started":[],"refused_starts":[],
		"already_ended":[{"reservation":4,"request":0,"at":"2026-03-02T10:00:00Z","reason":"already ended at 2026-03-02T10:00:00Z"}],
		"refused_ends":[{"reservation":7,"request":1,"at":"2026-03-02T09:00:00Z","reason":"reservation 7 request 1 already ended at 2026-03-02T10:00:00Z; an end at the earlier 2026-03-02T09:00:00Z is out of order"}]}`
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if len(a.AlreadyEnded) != 1 || len(a.RefusedEnds) != 1 || a.RefusedEnds[0].Reservation != 7 {
		t.Fatalf("decoded %+v", a)
	}
	got := answerText(a)
	if !strings.Contains(got, "ended reservation 4") || !strings.Contains(got, "end refused: reservation 7 request 1 already ended") {
		t.Errorf("answerText: %q", got)
	}
}
