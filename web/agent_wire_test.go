package web_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
	"github.com/clearhouse/clearhouse/web"
)

// The agent (agent/client.go, agent/backend.go) and the server (web/api_agent.go)
// each declare the agent API's types. These tests make a field added on one side
// alone fail: what the server sends decodes into the agent's types, and what the
// agent sends into the server's, with unknown fields refused.

// strictDecode decodes raw into v, refusing a field v lacks and data after the value.
func strictDecode(raw []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// fillAll sets every exported field reachable from v (a pointer) to a value that
// is not zero: strings "x", numbers 1, true, a fixed time, one element in every
// slice and map, every pointer allocated, so that omitempty drops nothing and every
// nested field is encoded.
func fillAll(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fillAll(v.Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fillAll(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fillAll(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, elem := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillAll(key)
		fillAll(elem)
		v.SetMapIndex(key, elem)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(0.5)
	}
}

// filledJSON is v's type with every field set (fillAll), encoded.
func filledJSON[T any](t *testing.T) []byte {
	t.Helper()
	var v T
	fillAll(reflect.ValueOf(&v))
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// Every field of the server's allocation, nested ones included, is one the agent's
// Allocation decodes; every field of the agent's Updates is one the server's
// APIUpdates decodes.
func TestAgentAndServerWireTypesAgreeOnEveryField(t *testing.T) {
	t.Parallel()
	alloc := filledJSON[web.APIAllocation](t)
	var a agent.Allocation
	if err := strictDecode(alloc, &a); err != nil {
		t.Errorf("the server's allocation, every field set, into agent.Allocation: %v\n%s", err, alloc)
	}
	if len(a.Limits) != 1 || a.Limits[0].Offered != 1 || len(a.Reclaim) != 1 || len(a.Upcoming) != 1 || a.OverLimit.GraceSeconds != 1 {
		t.Errorf("the filled allocation decoded to %+v: fields lost on the way", a)
	}
	updates := filledJSON[agent.Updates](t)
	var u web.APIUpdates
	if err := strictDecode(updates, &u); err != nil {
		t.Errorf("the agent's updates, every field set, into web.APIUpdates: %v\n%s", err, updates)
	}
	if len(u.OverLimit) != 1 || len(u.Reclaimed) != 1 || len(u.Unplaceable) != 1 || u.Agent == nil || len(u.Agent.Corrections) != 1 {
		t.Errorf("the filled updates decoded to %+v: fields lost on the way", u)
	}
}

// The checks above can fail: a field one side lacks is refused.
func TestStrictDecodeRefusesAFieldTheTypeLacks(t *testing.T) {
	t.Parallel()
	var l agent.Limit
	if err := strictDecode([]byte(`{"team":"ads","pool":"us-east/cpu","units":1,"surplus":2}`), &l); err == nil || !strings.Contains(err.Error(), "surplus") {
		t.Fatalf("an unknown field: %v", err)
	}
	if err := strictDecode([]byte(`{"team":"ads"} {}`), &l); err == nil {
		t.Fatal("data after the value was accepted")
	}
}

// The server's real answers, from a market with a best-effort task
// running: GET allocation decodes into agent.Allocation, the agent's report of the
// task done (encoded from agent.Updates) decodes into web.APIUpdates and the server
// takes it, and its answer decodes into agent.Answer; unknown fields refused all
// the way.
func TestTheServersAgentAnswersDecodeIntoTheAgentsTypes(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newAbacusAgent(t, db)
		x.runOne()
		code, raw := x.rawAPI(x.agent, "GET", "/api/v1/clusters/us-east/allocation", nil)
		if code != http.StatusOK {
			t.Fatalf("allocation: %d %s", code, raw)
		}
		var a agent.Allocation
		if err := strictDecode(raw, &a); err != nil {
			t.Fatalf("the allocation into agent.Allocation: %v\n%s", err, raw)
		}
		if a.Cluster != "us-east" || len(a.BestEffort) != 1 || len(a.Limits) == 0 || len(a.Pools) == 0 {
			t.Fatalf("the allocation decoded to %+v; want a task, limits and pools", a)
		}
		task := a.BestEffort[0]
		report := agent.Updates{
			BestEffort:     []agent.TaskEvent{{Task: task.ID, Event: "done", At: x.clock.Now()}},
			BestEffortJobs: []agent.JobMeasurement{{Job: task.Job, Utility: 2, Shares: map[string]float64{"us-east/cpu": 1}}},
			OwnerUsage:     []agent.OwnerUsage{{Team: "search", Pool: "us-east/cpu", Units: 3}},
			Agent:          &agent.Status{Backend: "test", Version: "v0"},
		}
		body, err := json.Marshal(report)
		if err != nil {
			t.Fatal(err)
		}
		var u web.APIUpdates
		if err := strictDecode(body, &u); err != nil {
			t.Fatalf("the agent's report into web.APIUpdates: %v\n%s", err, body)
		}
		code, raw = x.rawAPI(x.agent, "POST", "/api/v1/clusters/us-east/updates", body)
		if code != http.StatusOK {
			t.Fatalf("the report: %d %s", code, raw)
		}
		var ans agent.Answer
		if err := strictDecode(raw, &ans); err != nil {
			t.Fatalf("the answer into agent.Answer: %v\n%s", err, raw)
		}
		if ans.Moved == nil || ans.AtRisk == nil || ans.Ended == nil {
			t.Fatalf("the answer %s decoded to %+v; want its lists", raw, ans)
		}
	})
}

// rawAPI is api with the body as sent and as answered, undecoded.
func (f *fixture) rawAPI(token, method, path string, body []byte) (int, []byte) {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.srv.URL+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return res.StatusCode, raw
}

// wireDifferences are the fields one side of the agent API has and the other does
// not, each on purpose or on its way; the test below fails on any other, and on one
// listed here that is gone (then delete its line).
var wireDifferences = map[string]string{
	// Issue 37: the agent's contract reads each quota's best-effort part; the server
	// does not send it yet (another helper builds that side).
	"agent.Allocation quotas[].best_effort": "the server does not send it yet (issue 37)",
	// Capacity changes over a window (maintenance, a rack down) are taken from any
	// client of the API, a script or an operator's tool; the agent reports measured
	// capacity in pools[].capacity instead.
	"web.APIUpdates capacity":         "sent by scripts, not the agent",
	"web.APIUpdates capacity[].pool":  "sent by scripts, not the agent",
	"web.APIUpdates capacity[].from":  "sent by scripts, not the agent",
	"web.APIUpdates capacity[].to":    "sent by scripts, not the agent",
	"web.APIUpdates capacity[].units": "sent by scripts, not the agent",
}

// The agent's and the server's types have the same fields, nested ones included,
// but for wireDifferences: a field the agent reads and the server never sends, or
// one the server takes and the agent never sends, is named here (the decoding tests
// above catch only a field on the sending side).
func TestAgentAndServerWireTypesHaveTheSameFields(t *testing.T) {
	t.Parallel()
	found := map[string]bool{}
	for _, c := range [][2]reflect.Type{
		{reflect.TypeFor[agent.Allocation](), reflect.TypeFor[web.APIAllocation]()},
		{reflect.TypeFor[agent.Updates](), reflect.TypeFor[web.APIUpdates]()},
	} {
		a, s := map[string]bool{}, map[string]bool{}
		typePaths(c[0], "", a)
		typePaths(c[1], "", s)
		if len(a) < 20 || len(s) < 20 {
			t.Fatalf("%s: %d fields, %s: %d: the listing is wrong", c[0], len(a), c[1], len(s))
		}
		only := func(typ reflect.Type, have, other map[string]bool) {
			for p := range have {
				if other[p] {
					continue
				}
				key := typ.String() + " " + p
				found[key] = true
				if _, ok := wireDifferences[key]; !ok {
					t.Errorf("%s has %s, which the other side lacks", typ, p)
				}
			}
		}
		only(c[0], a, s)
		only(c[1], s, a)
	}
	for key := range wireDifferences {
		if !found[key] {
			t.Errorf("wireDifferences lists %q, which both sides now agree on: delete its line", key)
		}
	}
}
