// Package gpu is the verifier's GPU tier: it compiles every emitted CUDA
// kernel for its own target (sm80: an sm_80 cubin, with ptxas's register
// and spill counts, and compute_80 PTX; sm90: an sm_90a cubin), runs each
// one in its own child process on the GPU (an sm80 file on a later GPU
// through its PTX, an sm90 file only on compute capability 9.0), checks it
// against the float64 reference and times it. Everything here except device_cuda.go is pure Go
// and builds without CUDA: planning, sharding, input generation, the
// comparison, dispositions and merging of shard reports. device_cuda.go
// (build tag "cuda") is the only code that touches the driver, through
// gorgonia.org/cu; without the tag a kernel run is reported as not_run.
package gpu

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
)

// Disposition is the verdict on one (spec, backend).
type Disposition string

const (
	Passed       Disposition = "passed"
	Incorrect    Disposition = "incorrect"     // ran, but wrong or incomplete output
	Failed       Disposition = "failed"        // an error: compile, spills, launch, fault, crash, timeout
	NotRun       Disposition = "not_run"       // skipped: no GPU support in this build, or -compile-only
	NotSupported Disposition = "not_supported" // no cuda backend, or its target is not this GPU
	InvalidSpec  Disposition = "invalid_spec"  // the spec does not decode, validate or plan
)

// Bad reports whether d should fail the run.
func (d Disposition) Bad() bool { return d == Incorrect || d == Failed || d == InvalidSpec }

// Float is a float64 whose JSON form also carries NaN and ±Inf (as the
// strings "NaN", "+Inf", "-Inf"), which encoding/json refuses: a relative
// error of +Inf is exactly what a run with unwritten outputs produces.
type Float float64

func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"+Inf"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Inf"`), nil
	}
	return []byte(strconv.FormatFloat(v, 'g', -1, 64)), nil
}

func (f *Float) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		switch s {
		case "NaN":
			*f = Float(math.NaN())
		case "+Inf", "Inf":
			*f = Float(math.Inf(1))
		case "-Inf":
			*f = Float(math.Inf(-1))
		default:
			return fmt.Errorf("gpu: bad float %q", s)
		}
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}

// Compared says how many outputs were checked against the reference and
// whether that was all of them or a uniform sample.
type Compared struct {
	Count int    `json:"count"`
	Mode  string `json:"mode"` // "all" or "sampled"
}

// ArchInfo is what ptxas reported for one architecture: the main kernel's
// registers, spill bytes and static shared memory, and the repack
// kernel's registers.
type ArchInfo struct {
	Registers       int `json:"registers"`
	SpillBytes      int `json:"spills"`
	SmemBytes       int `json:"smem"`
	RepackRegisters int `json:"repack_registers,omitempty"`
}

// Timing is the event-timed forward (weight repack + main kernel).
type Timing struct {
	MeanMS   float64 `json:"mean"`
	MedianMS float64 `json:"median"`
	MinMS    float64 `json:"min"`
	Runs     int     `json:"runs"`
}

// Result is the verdict on one item, as the report lists it.
type Result struct {
	Index       int                 `json:"index"` // position in the full item list (before sharding)
	Spec        string              `json:"spec"`
	SpecPath    string              `json:"spec_path,omitempty"`
	File        string              `json:"file,omitempty"`
	Backend     string              `json:"backend"`
	Target      string              `json:"target"`           // the file's target (plan.Target.Name)
	Loaded      string              `json:"loaded,omitempty"` // the build that ran: "sm_80 cubin", "compute_80 PTX (JIT)"
	Disposition Disposition         `json:"disposition"`
	Reason      string              `json:"reason,omitempty"`
	Mutation    string              `json:"mutation,omitempty"` // the planted bug of a -mutate item: it should be incorrect
	RelL2       *Float              `json:"rel_l2,omitempty"`
	Compared    *Compared           `json:"compared,omitempty"`
	NaNOutputs  int                 `json:"nan_outputs"`
	Unwritten   int                 `json:"unwritten_outputs"` // NaNs still carrying the poison's bits
	Arch        map[string]ArchInfo `json:"arch,omitempty"`
	Time        *Timing             `json:"time_ms,omitempty"`
	GFLOPS      float64             `json:"gflops,omitempty"`
	FloorMS     float64             `json:"floor_ms,omitempty"`
	FloorFrac   float64             `json:"fraction_of_floor,omitempty"`
	FLOPs       float64             `json:"flops"`
	MinBytes    float64             `json:"min_bytes"`
	Precision   string              `json:"precision,omitempty"`
	Tile        string              `json:"tile,omitempty"` // the plan's tile, in spec form
	Grid        [3]int              `json:"grid"`
	Threads     int                 `json:"threads"`
	Seconds     float64             `json:"seconds"` // wall time of the kernel's run (child process)
}

// Key identifies an item across shards: a spec has one result per backend
// and target.
func (r Result) Key() string { return r.Spec + "/" + r.Backend + "." + r.Target }

// Report is the whole run (or one shard of it).
type Report struct {
	GPU     string   `json:"gpu"`
	Driver  int      `json:"driver_version"` // cuDriverGetVersion: 1000*major + 10*minor
	CC      string   `json:"compute_capability,omitempty"`
	Date    string   `json:"date"` // UTC, RFC 3339
	Commit  string   `json:"commit"`
	Host    string   `json:"host"`
	Seed    int64    `json:"seed"`
	Random  int      `json:"random,omitempty"`
	Shard   string   `json:"shard,omitempty"`  // "i/n" for one shard's report
	Shards  []string `json:"shards,omitempty"` // the shards a merged report combines
	Timed   bool     `json:"timed"`
	Results []Result `json:"items"`
}

// SetTiming fills the timing and the derived throughput fields.
func (r *Result) SetTiming(t Timing) {
	r.Time = &t
	if t.MedianMS > 0 {
		r.GFLOPS = r.FLOPs / (t.MedianMS * 1e-3) / 1e9
		ceilings := geom.H200
		if t, err := plan.TargetNamed(r.Target); err == nil {
			ceilings = t.Ceilings(ceilings, r.Backend)
		}
		r.FloorMS = ceilings.FloorMS(r.FLOPs, r.MinBytes, r.Precision)
		r.FloorFrac = r.FloorMS / t.MedianMS
	}
}

// Outcome is what a kernel run measured, before judging it.
type Outcome struct {
	Err       error   // set when the run did not complete (launch error, fault, ...)
	NaN       int     // outputs that are NaN after the run
	Unwritten int     // of those, outputs still holding the poison pattern
	RelL2     float64 // relative L2 error against the float64 reference
	Compared  int     // outputs compared
	Outputs   int     // outputs the kernel should have written
}

// Tolerance is the default relative L2 gate against float64: fp32 FFMA
// (and honest 3xTF32) reach about 1e-7 to 1e-6 on these sums.
const Tolerance = 1e-5

// Decide judges an outcome: an error is a failure; a NaN or unwritten
// output, a comparison that covered nothing, or a relative error above tol
// (or NaN) is incorrect; anything else passed.
func Decide(o Outcome, tol float64) (Disposition, string) {
	switch {
	case o.Err != nil:
		return Failed, o.Err.Error()
	case o.Unwritten > 0:
		return Incorrect, fmt.Sprintf("%d of %d outputs never written (still NaN poison)", o.Unwritten, o.Outputs)
	case o.NaN > 0:
		return Incorrect, fmt.Sprintf("%d of %d outputs are NaN", o.NaN, o.Outputs)
	case o.Compared == 0 && o.Outputs > 0:
		return Failed, "no output was compared with the reference"
	case !(o.RelL2 <= tol): // also catches NaN
		return Incorrect, fmt.Sprintf("relative L2 error %.3g > %.3g", o.RelL2, tol)
	}
	return Passed, ""
}
