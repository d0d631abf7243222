package abacus

import (
	"bytes"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse"
)

func TestDecodeAndEncode(t *testing.T) {
	in := `{"resources":["cpu","ram"],"jobs":[
		{"id":"a","budget":100,"utility":"linear","weights":{"cpu":2,"ram":1}},
		{"id":"b","budget":100,"utility":"linear","weights":{"ram":2,"cpu":1}},
		{"id":"c","budget":0,"weights":{"ram":1}},
		{"id":"d","budget":5}]}`
	inst, err := DecodeInstance(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if inst.Jobs[2].Utility != Linear || inst.Jobs[2].Weights[0] != 0 || inst.Jobs[3].Weights[0] != 1 || inst.Jobs[3].Weights[1] != 1 {
		t.Fatalf("defaults: %+v", inst.Jobs)
	}
	res := mustSolve(t, inst, DefaultOptions())
	var out bytes.Buffer
	if err := EncodeResult(&out, inst, res); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{`{"iterations":`, `"c":{"ram":0}`, `"sub_budgets":{"a":{"cpu":`} {
		if !strings.Contains(got, want) {
			t.Errorf("output %s lacks %s", got, want)
		}
	}
	if strings.Contains(got, `"c":{"cpu"`) || !strings.HasSuffix(got, "}\n") {
		t.Errorf("output %q lists an unused resource or is not one line", got)
	}
	again, _ := DecodeInstance(strings.NewReader(in))
	var out2 bytes.Buffer
	_ = EncodeResult(&out2, again, mustSolve(t, again, DefaultOptions()))
	if out2.String() != got {
		t.Error("the same input printed different bytes")
	}
}

func TestDecodeRefusesBadInput(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"negative budget", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":-5,"weights":{"cpu":1}}]}`, `job "etl": budget: must not be negative`},
		{"zero weight", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":5,"weights":{"cpu":0}}]}`, `job "etl": weights["cpu"]: must be positive`},
		{"negative weight", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":5,"weights":{"cpu":-2}}]}`, `job "etl": weights["cpu"]: must be positive`},
		{"empty weights", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":5,"weights":{}}]}`, `job "etl": weights: at least one`},
		{"unknown resource", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":5,"weights":{"gpu":1}}]}`, `job "etl": weights: unknown resource "gpu"`},
		{"unknown utility", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":5,"utility":"sqrt"}]}`, `job "etl": utility: must be "linear" or "log"`},
		{"missing budget", `{"resources":["cpu"],"jobs":[{"id":"etl"}]}`, `job "etl": budget: required`},
		{"missing id", `{"resources":["cpu"],"jobs":[{"budget":1}]}`, `jobs[0]: id: required`},
		{"duplicate id", `{"resources":["cpu"],"jobs":[{"id":"a","budget":1},{"id":"a","budget":2}]}`, `job "a": id: listed twice`},
		{"unknown job field", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"limit":3}]}`, `job "etl": json: unknown field "limit"`},
		{"unknown top field", `{"resources":["cpu"],"jobs":[],"alpha":0.5}`, `instance: json: unknown field "alpha"`},
		{"duplicate key in weights", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":1,"weights":{"cpu":1,"cpu":2}}]}`, `job "etl": weights: key "cpu" given twice`},
		{"duplicate key before id", `{"resources":["cpu"],"jobs":[{"budget":1,"budget":2,"id":"etl"}]}`, `jobs[0]: key "budget" given twice`},
		{"duplicate top key", `{"resources":["cpu"],"resources":["ram"],"jobs":[]}`, `instance: key "resources" given twice`},
		{"wrong type", `{"resources":["cpu"],"jobs":[{"id":"etl","budget":"ten"}]}`, `job "etl": json: cannot unmarshal string`},
		{"trailing data", `{"resources":["cpu"],"jobs":[]} {}`, `instance: unexpected data after the instance`},
		{"truncated", `{"resources":["cpu"],"jobs":[`, `instance: `},
		{"duplicate resource", `{"resources":["cpu","cpu"],"jobs":[]}`, `resources: "cpu" is listed twice`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeInstance(strings.NewReader(c.in))
			if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !strings.Contains(clearhouse.ErrorMessage(err), c.want) {
				t.Errorf("error %v, want EINVALID containing %q", err, c.want)
			}
		})
	}
}
