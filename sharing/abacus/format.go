package abacus

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
)

// The JSON format of `clearhouse abacus solve` (issue 14):
//
//	in:  {"resources":["cpu","ram"],
//	      "jobs":[{"id":"etl","budget":120,"utility":"linear","weights":{"cpu":2,"ram":1}}]}
//	out: {"iterations":N,"shares":{job:{resource:s}},"sub_budgets":{job:{resource:b}}}
//
// A job's weights name the resources it uses, each with a positive weight; the
// resources it does not name it does not use. A job without "weights" has equal
// weights (1) on every resource, and one without "utility" is linear. The output lists
// each job's used resources only.

type wireInstance struct {
	Resources []string          `json:"resources"`
	Jobs      []json.RawMessage `json:"jobs"`
}

type wireJob struct {
	ID      string              `json:"id"`
	Budget  *float64            `json:"budget"`
	Utility *string             `json:"utility"`
	Weights *map[string]float64 `json:"weights"`
}

// maxInput bounds what DecodeInstance reads: 256 MiB.
const maxInput = 256 << 20

// DecodeInstance reads one JSON instance from r and validates it. It returns
// EINVALID, naming the job (by id, or by position before its id is known) and the
// field, for: malformed JSON, trailing data, a key given twice in any object, an
// unknown field, a missing id or budget, a negative or non-finite budget, an unknown
// utility, a weight that is not positive, a weight on a resource the instance does not
// list, and every rule of Instance.Validate.
func DecodeInstance(r io.Reader) (Instance, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return Instance{}, err
	}
	if len(data) > maxInput {
		return Instance{}, invalid("instance: larger than %d bytes", maxInput)
	}
	if err := checkKeys(data); err != nil {
		return Instance{}, err
	}
	var w wireInstance
	if err := strictUnmarshal(data, &w); err != nil {
		return Instance{}, invalid("instance: %v", err)
	}
	inst := Instance{Resources: w.Resources, Jobs: make([]Job, len(w.Jobs))}
	index := make(map[string]int, len(w.Resources))
	for r, name := range w.Resources {
		index[name] = r
	}
	for k, raw := range w.Jobs {
		if inst.Jobs[k], err = decodeJob(raw, k, inst.Resources, index); err != nil {
			return Instance{}, err
		}
	}
	if err := inst.Validate(); err != nil {
		return Instance{}, err
	}
	return inst, nil
}

func strictUnmarshal(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("unexpected data after the instance")
	}
	return nil
}

func decodeJob(raw json.RawMessage, k int, resources []string, index map[string]int) (Job, error) {
	var wj wireJob
	_ = json.Unmarshal(raw, &wj) // a first, lenient read, only to name the job
	name := fmt.Sprintf("jobs[%d]", k)
	if wj.ID != "" {
		name = fmt.Sprintf("job %q", wj.ID)
	}
	wj = wireJob{}
	if err := strictUnmarshal(raw, &wj); err != nil {
		return Job{}, invalid("%s: %v", name, err)
	}
	job := Job{ID: wj.ID, Utility: Linear}
	if wj.Budget == nil {
		return Job{}, invalid("%s: budget: required", name)
	}
	job.Budget = *wj.Budget
	if job.Budget < 0 {
		return Job{}, invalid("%s: budget: must not be negative, got %v", name, job.Budget)
	}
	if wj.Utility != nil {
		u, err := ParseUtility(*wj.Utility)
		if err != nil {
			return Job{}, invalid("%s: %s", name, strings.TrimPrefix(err.Error(), "invalid: "))
		}
		job.Utility = u
	}
	if wj.Weights == nil {
		job.Weights = EqualWeights(len(resources))
		return job, nil
	}
	job.Weights = make([]float64, len(resources))
	names := make([]string, 0, len(*wj.Weights))
	for res := range *wj.Weights {
		names = append(names, res)
	}
	slices.Sort(names) // the first fault in a fixed order
	for _, res := range names {
		wt := (*wj.Weights)[res]
		r, ok := index[res]
		switch {
		case !ok:
			return Job{}, invalid("%s: weights: unknown resource %q (not in resources)", name, res)
		case !(wt > 0):
			return Job{}, invalid("%s: weights[%q]: must be positive, got %v", name, res, wt)
		}
		job.Weights[r] = wt
	}
	return job, nil
}

// wireResult is the output object; encoding/json writes map keys sorted, so the same
// result always prints the same bytes.
type wireResult struct {
	Iterations int                           `json:"iterations"`
	Shares     map[string]map[string]float64 `json:"shares"`
	SubBudgets map[string]map[string]float64 `json:"sub_budgets"`
}

// EncodeResult writes res, the result of Solve on inst, as one line of JSON in the
// format above. It lists each job's used resources only.
func EncodeResult(w io.Writer, inst Instance, res Result) error {
	out := wireResult{
		Iterations: res.Iterations,
		Shares:     make(map[string]map[string]float64, len(inst.Jobs)),
		SubBudgets: make(map[string]map[string]float64, len(inst.Jobs)),
	}
	for i, job := range inst.Jobs {
		shares, subs := map[string]float64{}, map[string]float64{}
		for r, name := range inst.Resources {
			if job.Uses(r) {
				shares[name], subs[name] = res.Shares[i][r], res.SubBudgets[i][r]
			}
		}
		out.Shares[job.ID], out.SubBudgets[job.ID] = shares, subs
	}
	return json.NewEncoder(w).Encode(out)
}

// checkKeys walks the whole document and refuses an object that gives a key twice
// (encoding/json would silently keep the last), naming where: "jobs[2]", or
// `job "etl": weights` once the job's id has been read.
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if _, err := walkKeys(dec, "", false); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return invalid("instance: %v", err)
		}
		return err
	}
	return nil
}

// walkKeys reads one value; it returns the token of a scalar (nil for an object or an
// array). isJob says the value is an element of the top-level "jobs".
func walkKeys(dec *json.Decoder, where string, isJob bool) (json.Token, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	delim, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch delim {
	case '[':
		for k := 0; dec.More(); k++ {
			if _, err := walkKeys(dec, fmt.Sprintf("%s[%d]", where, k), where == "jobs"); err != nil {
				return nil, err
			}
		}
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, err
			}
			key, _ := tok.(string)
			if seen[key] {
				return nil, invalid("%s: key %q given twice", orTop(where), key)
			}
			seen[key] = true
			val, err := walkKeys(dec, child(where, key), false)
			if err != nil {
				return nil, err
			}
			if id, ok := val.(string); ok && isJob && key == "id" && id != "" {
				where = fmt.Sprintf("job %q", id)
			}
		}
	}
	_, err = dec.Token() // the closing delimiter
	return nil, err
}

func child(where, key string) string {
	switch {
	case where == "":
		return key
	case strings.HasPrefix(where, "job "):
		return where + ": " + key
	}
	return where + "." + key
}

func orTop(where string) string {
	if where == "" {
		return "instance"
	}
	return where
}
