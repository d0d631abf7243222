package auction

import (
	"encoding/json"
	"reflect"
	"testing"
)

// decodeCases are inputs decodeFast takes or leaves to encoding/json: the common
// form, and every form it must not read differently from encoding/json.
var decodeCases = []string{
	`{"pools":[{"id":"p","supply":1,"reserve_price":1}],"bidders":[{"id":"b","limit":3,"bundles":[{"p":1}]}]}`,
	`{"pools":[{"id":"a","supply":0,"reserve_price":0}],"bidders":[{"id":"s","limits":[-5],"bundles":[{"a":-2}]}],"params":{"max_rounds":3}}`,
	` { "pools" : [ ] , "bidders" : [ { "id" : "x" , "limits" : [ ] , "bundles" : [ { } ] } ] } ` + "\n",
	`{"pools":[{"id":"p","supply":1e300,"reserve_price":-0}]}`,
	`{"pools":[{"id":"p","supply":1.5E+2,"reserve_price":0.25e-1}],"params":{"alpha":2,"final_round":{"seconds":1,"off":true}}}`,
	`{"pools":[{"id":"a","supply":1}],"pools":[{"id":"b"}]}`,
	`{"pools":[{"id":"a","supply":1,"id":"b"}]}`,
	`{"bidders":[{"id":"b","bundles":[{"p":1,"p":2}]}]}`,
	`{"bidders":[{"id":"b","limit":null,"bundles":null}]}`,
	`{"Pools":[{"ID":"p","Supply":1}]}`,
	`{"pools":[{"id":"caf\u00e9","supply":1}]}`,
	"{\"pools\":[{\"id\":\"\xff\",\"supply\":1}]}",
	"{\"pools\":[{\"id\":\"a\tb\",\"supply\":1}]}",
	`{"pools":[{"id":"p","supply":01}]}`,
	`{"pools":[{"id":"p","supply":1.}]}`,
	`{"pools":[{"id":"p","supply":-}]}`,
	`{"pools":[{"id":"p","supply":+1}]}`,
	`{"pools":[{"id":"p","supply":1e999}]}`,
	`{"pools":[{"id":"p","supply":"1"}]}`,
	`{"pools":[{"id":"p","supply":1,"color":"red"}]}`,
	`{"pools":[{"id":"p"}],"extra":1}`,
	`{"pools":[]} {}`,
	`{"pools":[]}x`,
	`{"pools":[],}`,
	`{"pools":[1,]}`,
	`{"params":{"alpha":1},"params":{"delta":0.1}}`,
	`{"params":{"alpha":1]`,
	`{"params":"x"}`,
	`{"params":{"bogus":1}}`,
	`{"params":{"final_round":{"seconds":"\"}"}}}`,
	`[]`, `null`, ``, `{`,
}

// Whatever decodeFast accepts, encoding/json decodes to the very same instance.
func TestFastDecodingAgreesWithEncodingJSON(t *testing.T) {
	gen, err := json.Marshal(Generate(GenConfig{Seed: 5, Clusters: 4, Resources: 3, Bidders: 200, Scarcity: 1.5}))
	if err != nil {
		t.Fatal(err)
	}
	fast := 0
	for _, in := range append(decodeCases, string(gen)) {
		if sameAsEncodingJSON(t, []byte(in)) {
			fast++
		}
	}
	if fast < 6 {
		t.Fatalf("decodeFast took only %d of the inputs; the common form must not fall back", fast)
	}
}

// sameAsEncodingJSON fails t when decodeFast decodes data differently from
// encoding/json; it reports whether decodeFast took data.
func sameAsEncodingJSON(t *testing.T, data []byte) bool {
	t.Helper()
	got, err := decodeFast(data)
	if err != nil {
		return false
	}
	want, werr := decodeJSON(data)
	if werr != nil {
		t.Errorf("%q: decodeFast took it, encoding/json refuses it: %v", data, werr)
		return true
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%q: decodeFast %+v, encoding/json %+v", data, got, want)
	}
	return true
}

func FuzzFastDecoding(f *testing.F) {
	for _, in := range decodeCases {
		f.Add([]byte(in))
	}
	f.Fuzz(func(t *testing.T, data []byte) { sameAsEncodingJSON(t, data) })
}
