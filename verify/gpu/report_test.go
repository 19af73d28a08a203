package gpu

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name string
		o    Outcome
		want Disposition
		why  string // part of the reason
	}{
		{"exact", Outcome{RelL2: 0, Compared: 10, Outputs: 10}, Passed, ""},
		{"fp32 rounding", Outcome{RelL2: 3e-7, Compared: 10, Outputs: 10}, Passed, ""},
		{"at the gate", Outcome{RelL2: 1e-5, Compared: 10, Outputs: 10}, Passed, ""},
		{"above the gate", Outcome{RelL2: 1.1e-5, Compared: 10, Outputs: 10}, Incorrect, "relative L2"},
		{"tf32-level error", Outcome{RelL2: 5e-4, Compared: 10, Outputs: 10}, Incorrect, "relative L2"},
		{"NaN error", Outcome{RelL2: math.NaN(), Compared: 10, Outputs: 10}, Incorrect, "relative L2"},
		{"Inf error", Outcome{RelL2: math.Inf(1), Compared: 10, Outputs: 10}, Incorrect, "relative L2"},
		{"unwritten", Outcome{NaN: 3, Unwritten: 3, RelL2: math.Inf(1), Compared: 10, Outputs: 10}, Incorrect, "never written"},
		{"computed NaN", Outcome{NaN: 2, RelL2: math.Inf(1), Compared: 10, Outputs: 10}, Incorrect, "are NaN"},
		{"NaN outside the sample", Outcome{NaN: 1, RelL2: 0, Compared: 5, Outputs: 10}, Incorrect, "are NaN"},
		{"error wins", Outcome{Err: errors.New("IllegalAddress"), NaN: 10, Outputs: 10}, Failed, "IllegalAddress"},
		{"nothing compared", Outcome{RelL2: 0, Compared: 0, Outputs: 10}, Failed, "no output"},
		{"custom tolerance", Outcome{RelL2: 2e-5, Compared: 1, Outputs: 1}, Passed, ""},
	}
	for _, c := range cases {
		tol := Tolerance
		if c.name == "custom tolerance" {
			tol = 1e-4
		}
		got, why := Decide(c.o, tol)
		if got != c.want || !strings.Contains(why, c.why) || (c.want == Passed) != (why == "") {
			t.Errorf("%s: Decide(%+v) = %s %q, want %s containing %q", c.name, c.o, got, why, c.want, c.why)
		}
	}
}

func TestApply(t *testing.T) {
	base := func() Result { return Result{Spec: "s", Backend: "cuda", FLOPs: 2e12, MinBytes: 4.3e9} }

	r := base()
	r.Apply(RunOutput{RelL2: 1e-7, Compared: &Compared{100, "all"}, Outputs: 100, Time: &Timing{MeanMS: 110, MedianMS: 100, Runs: 100}}, Tolerance)
	if r.Disposition != Passed || r.RelL2 == nil || *r.RelL2 != 1e-7 || r.Compared.Count != 100 {
		t.Errorf("passing run: %+v", r)
	}
	// 2e12 FLOPs in 100 ms is 20 TFLOP/s; floor max(2e12/67e12, 4.3e9/4.3e12) s = 29.85 ms.
	if math.Abs(r.GFLOPS-20000) > 1e-6 || math.Abs(r.FloorMS-1e3*2e12/geom.FFMAFLOPS) > 1e-9 || math.Abs(r.FloorFrac-r.FloorMS/100) > 1e-12 {
		t.Errorf("throughput: %v GFLOP/s, floor %v ms (%v)", r.GFLOPS, r.FloorMS, r.FloorFrac)
	}

	// 3xTF32: an sm90 kernel's floor at wgmma's rate, an sm80 kernel's at
	// mma.sync's (its only tensor instruction): 2e12 / (495e12/3) and
	// 2e12 / (305e12/3) s.
	for target, rate := range map[string]float64{"sm90": 495e12 / 3, "sm80": 305e12 / 3} {
		r = base()
		r.Target, r.Precision = target, "3xtf32"
		r.Apply(RunOutput{RelL2: 1e-7, Compared: &Compared{100, "all"}, Outputs: 100, Time: &Timing{MeanMS: 110, MedianMS: 100, Runs: 100}}, Tolerance)
		if want := 1e3 * 2e12 / rate; math.Abs(r.FloorMS-want) > 1e-9*want {
			t.Errorf("%s 3xtf32: floor %v ms, want %v", target, r.FloorMS, want)
		}
	}

	r = base()
	r.Apply(RunOutput{RelL2: 0, Compared: &Compared{100, "all"}, Outputs: 100, Nondeterministic: 4}, Tolerance)
	if r.Disposition != Incorrect || !strings.Contains(r.Reason, "differ") {
		t.Errorf("nondeterministic: %s %q", r.Disposition, r.Reason)
	}

	r = base()
	r.Apply(RunOutput{NotSupported: "a sm_90 cubin does not run on compute capability 8.0"}, Tolerance)
	if r.Disposition != NotSupported {
		t.Errorf("not supported: %s", r.Disposition)
	}

	r = base()
	r.Apply(RunOutput{Error: "launching: InvalidValue"}, Tolerance)
	if r.Disposition != Failed || r.Reason != "launching: InvalidValue" {
		t.Errorf("error: %s %q", r.Disposition, r.Reason)
	}

	r = base()
	r.Apply(RunOutput{NaN: 7, Unwritten: 7, RelL2: Float(math.Inf(1)), Compared: &Compared{5, "sampled"}, Outputs: 100}, Tolerance)
	if r.Disposition != Incorrect || r.NaNOutputs != 7 || r.Unwritten != 7 {
		t.Errorf("unwritten: %+v", r)
	}
}

func TestFloatJSON(t *testing.T) {
	for _, v := range []float64{0, 1.5e-7, -3, math.Inf(1), math.Inf(-1), math.NaN()} {
		b, err := json.Marshal(Float(v))
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		var back Float
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !(float64(back) == v || (math.IsNaN(v) && math.IsNaN(float64(back)))) {
			t.Errorf("%v -> %s -> %v", v, b, back)
		}
	}
	var f Float
	if err := json.Unmarshal([]byte(`"big"`), &f); err == nil {
		t.Error(`"big" decoded`)
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{5, 1, 3, 2, 4})
	if s.MedianMS != 3 || s.MeanMS != 3 || s.MinMS != 1 || s.Runs != 5 {
		t.Errorf("odd: %+v", s)
	}
	s = Summarize([]float64{4, 1, 3, 2})
	if s.MedianMS != 2.5 || s.MeanMS != 2.5 {
		t.Errorf("even: %+v", s)
	}
	if s := Summarize(nil); s != (Timing{}) {
		t.Errorf("empty: %+v", s)
	}
}

func TestArch(t *testing.T) {
	for arch, want := range map[string][2]int{"sm_80": {8, 0}, "sm_90": {9, 0}, "sm_90a": {9, 0}, "sm_86": {8, 6}, "sm_100": {10, 0}, "compute_80": {8, 0}} {
		if ma, mi, err := ParseArch(arch); err != nil || [2]int{ma, mi} != want {
			t.Errorf("ParseArch(%s) = %d.%d %v", arch, ma, mi, err)
		}
	}
	for _, bad := range []string{"", "90", "sm_", "compute_", "sm_x"} {
		if _, _, err := ParseArch(bad); err == nil {
			t.Errorf("ParseArch(%q) accepted", bad)
		}
	}
	if b := Builds(plan.SM80); !reflect.DeepEqual(b, []string{"sm_80", "compute_80"}) {
		t.Errorf("sm80 builds %v", b)
	}
	if b := Builds(plan.SM90); !reflect.DeepEqual(b, []string{"sm_90a"}) {
		t.Errorf("sm90 builds %v", b)
	}
}

// Which build a GPU loads: an sm80 file its cubin on the A100 and its
// family, its PTX through the JIT on later GPUs; an sm90 file only on 9.0.
func TestLoad(t *testing.T) {
	for _, c := range []struct {
		target plan.Target
		cc     string
		want   string // "": not this GPU
	}{
		{plan.SM80, "8.0", "sm_80"}, {plan.SM80, "8.6", "sm_80"}, {plan.SM80, "9.0", "compute_80"},
		{plan.SM80, "10.0", "compute_80"}, {plan.SM80, "7.5", ""},
		{plan.SM90, "9.0", "sm_90a"}, {plan.SM90, "8.0", ""}, {plan.SM90, "10.0", ""}, {plan.SM90, "9.1", ""},
	} {
		arch, why := Load(c.target, c.cc)
		if arch != c.want || (arch == "") != (why != "") {
			t.Errorf("Load(%s, %s) = %q %q, want %q", c.target.Name, c.cc, arch, why, c.want)
		}
		if arch == "" && !strings.Contains(why, "not this GPU") {
			t.Errorf("Load(%s, %s): reason %q", c.target.Name, c.cc, why)
		}
	}
	if arch, why := Load(plan.SM80, "bogus"); arch != "" || why == "" {
		t.Errorf("bad compute capability: %q %q", arch, why)
	}
	if LoadedAs("compute_80") != "compute_80 PTX (JIT)" || LoadedAs("sm_90a") != "sm_90a cubin" {
		t.Error(LoadedAs("compute_80"), LoadedAs("sm_90a"))
	}
}
