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
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// The agent (agent/wire.go) and the server (web/api_agent.go) speak the agent API
// with the same types, those of api/v1. These tests make a drift fail: the agent's
// names must stay the contract's types, and what the server really sends decodes into
// them, and what the agent sends is what the server takes, with unknown fields refused.

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
	alloc := filledJSON[apiv1.Allocation](t)
	var a agent.Allocation
	if err := strictDecode(alloc, &a); err != nil {
		t.Errorf("the server's allocation, every field set, into agent.Allocation: %v\n%s", err, alloc)
	}
	if len(a.Limits) != 1 || a.Limits[0].Offered != 1 || len(a.Reclaim) != 1 || len(a.Upcoming) != 1 || a.OverLimit.GraceSeconds != 1 {
		t.Errorf("the filled allocation decoded to %+v: fields lost on the way", a)
	}
	updates := filledJSON[agent.Updates](t)
	var u apiv1.Updates
	if err := strictDecode(updates, &u); err != nil {
		t.Errorf("the agent's updates, every field set, into apiv1.Updates: %v\n%s", err, updates)
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
// task done (encoded from agent.Updates) decodes into apiv1.Updates and the server
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
		utility := 2.0
		report := agent.Updates{
			BestEffort:     []agent.TaskEvent{{Task: task.ID, Event: "done", At: x.clock.Now()}},
			BestEffortJobs: []agent.JobMeasurement{{Job: task.Job, Utility: &utility, Shares: map[string]float64{"us-east/cpu": 1}}},
			OwnerUsage:     []agent.OwnerUsage{{Team: "search", Pool: "us-east/cpu", Units: 3}},
			Agent:          &agent.Status{Backend: "test", Version: "v0"},
		}
		body, err := json.Marshal(report)
		if err != nil {
			t.Fatal(err)
		}
		var u apiv1.Updates
		if err := strictDecode(body, &u); err != nil {
			t.Fatalf("the agent's report into apiv1.Updates: %v\n%s", err, body)
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

// The agent's wire types are the contract's (api/v1), not copies: a field added to
// one is in the other. (They were copies until issue 35; this test replaces the one
// that compared their fields.)
func TestTheAgentSpeaksTheContractsTypes(t *testing.T) {
	for _, c := range [][2]reflect.Type{
		{reflect.TypeFor[agent.Allocation](), reflect.TypeFor[apiv1.Allocation]()},
		{reflect.TypeFor[agent.Updates](), reflect.TypeFor[apiv1.Updates]()},
		{reflect.TypeFor[agent.Answer](), reflect.TypeFor[apiv1.Answer]()},
	} {
		if c[0] != c[1] {
			t.Errorf("the agent's %s is not the contract's %s", c[0], c[1])
		}
	}
	// The listing the other tests rely on sees nested fields.
	paths := map[string]bool{}
	typePaths(reflect.TypeFor[agent.Allocation](), "", paths)
	for _, p := range []string{"limits[].best_effort", "best_effort[].workload.kubernetes.image", "over_limit.grace_seconds", "reclaim[].since"} {
		if !paths[p] {
			t.Errorf("agent.Allocation's fields lack %s: %v", p, paths)
		}
	}
}
