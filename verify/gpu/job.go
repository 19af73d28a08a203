package gpu

import (
	"encoding/json"
	"errors"
	"fmt"

	"convtgen/verify"
)

// Job is everything a child process needs to run one kernel: it travels as
// JSON on the child's command line (verify -run-one JOB).
type Job struct {
	Kernel    verify.Kernel `json:"kernel"`
	InputDist string        `json:"input_dist"` // "rand" or "randn"
	// Builds are the compiled files of the kernel's target, by -arch
	// (Builds): the child loads the one its GPU runs (Load).
	Builds  map[string]string `json:"builds"`
	Seed    uint64            `json:"seed"` // inputs' seed
	Compare CompareConfig     `json:"compare"`
	Timing  *TimingConfig     `json:"timing,omitempty"` // nil: no timing
	// Store: the ops the kernel's store applies to the convolution (a
	// level-2 kernel); nil when it writes the convolution.
	Store *Store `json:"store,omitempty"`
}

// TimingConfig is how a kernel is timed: Warmup untimed forwards, then
// Runs timed ones, each after a FlushBytes memset that evicts the L2.
type TimingConfig struct {
	Warmup     int   `json:"warmup"`
	Runs       int   `json:"runs"`
	FlushBytes int64 `json:"flush_bytes"`
}

// DefaultTiming follows the evaluator: warm up, then at least 100 forwards
// with the L2 flushed before each (H200's L2 is 60 MB; 256 MB is plenty).
var DefaultTiming = TimingConfig{Warmup: 3, Runs: 100, FlushBytes: 256 << 20}

// Encode and DecodeJob are the job's wire form.
func (j *Job) Encode() (string, error) {
	b, err := json.Marshal(j)
	return string(b), err
}

func DecodeJob(s string) (*Job, error) {
	var j Job
	if err := json.Unmarshal([]byte(s), &j); err != nil {
		return nil, fmt.Errorf("decoding job: %w", err)
	}
	if j.Kernel.Function == "" || len(j.Builds) == 0 {
		return nil, errors.New("decoding job: the kernel's name and builds are required")
	}
	if j.Timing != nil && (j.Timing.Runs < 1 || j.Timing.Warmup < 0 || j.Timing.FlushBytes < 0) {
		return nil, fmt.Errorf("decoding job: bad timing %+v", *j.Timing)
	}
	return &j, nil
}

// RunOutput is what a child process prints (one JSON line on stdout) for
// its parent: the measurements, not yet judged.
type RunOutput struct {
	Error        string    `json:"error,omitempty"`         // the run did not complete
	NotSupported string    `json:"not_supported,omitempty"` // the GPU runs none of the target's builds
	Loaded       string    `json:"loaded,omitempty"`        // the build that ran (an -arch value)
	NaN          int       `json:"nan"`
	Unwritten    int       `json:"unwritten"`
	RelL2        Float     `json:"rel_l2"`
	Compared     *Compared `json:"compared,omitempty"`
	Outputs      int       `json:"outputs"`
	// Nondeterministic counts outputs whose bits differ between the checked
	// run and the last timed one (each output is written once, with no
	// atomics: the kernel must be bitwise repeatable).
	Nondeterministic int     `json:"nondeterministic,omitempty"`
	Time             *Timing `json:"time,omitempty"`
	Device           string  `json:"device,omitempty"`
	CC               string  `json:"cc,omitempty"`
	Driver           int     `json:"driver,omitempty"`
}

// Apply judges a child's output into the item's result.
func (r *Result) Apply(out RunOutput, tol float64) {
	if out.Loaded != "" {
		r.Loaded = LoadedAs(out.Loaded)
	}
	if out.NotSupported != "" {
		r.Disposition, r.Reason = NotSupported, out.NotSupported
		return
	}
	o := Outcome{NaN: out.NaN, Unwritten: out.Unwritten, RelL2: float64(out.RelL2), Outputs: out.Outputs}
	if out.Error != "" {
		o.Err = errors.New(out.Error)
	}
	if out.Compared != nil {
		o.Compared = out.Compared.Count
		c := *out.Compared
		r.Compared = &c
		rel := out.RelL2
		r.RelL2 = &rel
	}
	r.NaNOutputs, r.Unwritten = out.NaN, out.Unwritten
	r.Disposition, r.Reason = Decide(o, tol)
	if r.Disposition == Passed && out.Nondeterministic > 0 {
		r.Disposition = Incorrect
		r.Reason = fmt.Sprintf("%d outputs differ between the checked run and a timed run", out.Nondeterministic)
	}
	if out.Time != nil {
		r.SetTiming(*out.Time)
	}
}
