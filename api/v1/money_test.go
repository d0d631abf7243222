package apiv1_test

import (
	"encoding/json"
	"errors"
	"testing"

	apiv1 "github.com/clearhouse/clearhouse/api/v1"
)

// An amount in a request is kept as written, from a string or a number, never read
// through a float; anything else is a type error naming apiv1.Money, and an amount
// encodes as a string.
func TestMoneyKeepsTheTextAsWritten(t *testing.T) {
	for raw, want := range map[string]string{
		`{"limit": "12.50"}`:                  "12.50",
		`{"limit": 0.1}`:                      "0.1",
		`{"limit": 12345678901234567.000001}`: "12345678901234567.000001",
		`{"limit": -3}`:                       "-3",
	} {
		var body apiv1.NewOrder
		if err := json.Unmarshal([]byte(raw), &body); err != nil || body.Limit == nil || body.Limit.Text() != want {
			t.Errorf("%s: %v, %+v; want the text %q", raw, err, body.Limit, want)
		}
	}
	for _, raw := range []string{`{"limit": true}`, `{"limit": {}}`, `{"limit": []}`, `{"limits": [null]}`} {
		var body apiv1.NewOrder
		var typ *json.UnmarshalTypeError
		if err := json.Unmarshal([]byte(raw), &body); !errors.As(err, &typ) || typ.Type != apiv1.MoneyType {
			t.Errorf("%s: %v; want a type error naming apiv1.Money", raw, err)
		}
	}
	out, err := json.Marshal(apiv1.NewOrder{Bundles: []map[string]int64{{"us-east/cpu": 1}}, Limit: new(apiv1.MoneyOf("7.25"))})
	if err != nil || string(out) != `{"bundles":[{"us-east/cpu":1}],"limit":"7.25"}` {
		t.Errorf("encoded %s, %v", out, err)
	}
}

// A job's key names its reservation and request; a correction says what changed.
func TestJobKeyAndCorrectionSayWhatTheyName(t *testing.T) {
	j := apiv1.Job{Reservation: 7, Request: 2}
	if got := j.Key().String(); got != "reservation 7 request 2" {
		t.Errorf("key %q", got)
	}
	c := apiv1.Correction{Team: "ads", Pool: "us-east/cpu", Object: "ResourceQuota ads/clearhouse", Was: "10", Now: "12"}
	if got := c.String(); got != `ResourceQuota ads/clearhouse (team ads, pool us-east/cpu): "10" -> "12"` {
		t.Errorf("correction %q", got)
	}
}
