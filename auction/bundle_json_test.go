package auction_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/clearhouse/clearhouse/auction"
)

// A bundle decodes to what encoding/json makes of a map[string]float64, and a
// bundle it refuses is refused: escapes, invalid UTF-8, null, repeated ids,
// exponents and white space included.
func TestBundleDecodesAsAPlainMap(t *testing.T) {
	for _, in := range []string{
		`{}`, ` { } `, `null`,
		`{"c000/cpu": 4, "c000/ram": -16}`,
		"{\n\t\"a\" :1e3 ,\"b\":-2.5E-1}",
		`{"a": 1, "a": 2}`,
		`{"a": null}`,
		`{"\u00e9t\u00e9/cpu": 3, "quo\"te": 1, "back\\slash": 2}`,
		"{\"bad\xff\": 1}",
		`{"é": 7}`,
	} {
		var want map[string]float64
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatalf("%s: the plain map refuses it: %v", in, err)
		}
		var got auction.Bundle
		if err := json.Unmarshal([]byte(in), &got); err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if !reflect.DeepEqual(map[string]float64(got), want) || (got == nil) != (want == nil) {
			t.Errorf("%s: got %#v, want %#v", in, got, want)
		}
	}
	for _, in := range []string{`{"a": "1"}`, `{"a": true}`, `[1]`, `"x"`, `{"a": {}}`, `{"a": 1e999}`} {
		var got auction.Bundle
		if err := json.Unmarshal([]byte(in), &got); err == nil {
			t.Errorf("%s: decoded to %v, want an error", in, got)
		}
	}
}

// A generated instance decodes to the very instance that was encoded.
func TestInstanceRoundTripsThroughJSON(t *testing.T) {
	inst := auction.Generate(auction.GenConfig{Seed: 3, Clusters: 5, Resources: 4, Bidders: 300, Scarcity: 1.5})
	data, err := json.Marshal(inst)
	if err != nil {
		t.Fatal(err)
	}
	got, err := auction.DecodeInstance(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Fatalf("the decoded instance encodes differently:\n%.300s\n%.300s", again, data)
	}
	if !reflect.DeepEqual(got.Bidders, inst.Bidders) {
		t.Fatal("the decoded bidders differ from the generated ones")
	}
}
