package gpu

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/ref"
)

var small = geom.Conv{
	Batch: 2, InChannels: 6, OutChannels: 4, In: [3]int{5, 4, 7}, Kernel: [3]int{3, 2, 3},
	Stride: [3]int{2, 1, 2}, Padding: [3]int{1, 0, 1}, OutputPadding: [3]int{1, 0, 0}, Dilation: [3]int{1, 2, 1},
	Groups: 2, Bias: true,
}

// gpuLike is what a correct fp32 kernel returns: the exact sums rounded
// once to float32.
func gpuLike(c geom.Conv, in Inputs) []float32 {
	want := ref.Forward(c, in.X, in.W, in.B)
	y := make([]float32, len(want))
	for i, v := range want {
		y[i] = float32(v)
	}
	return y
}

func TestComparePasses(t *testing.T) {
	in := MakeInputs(small, "randn", 7)
	y := gpuLike(small, in)
	o, cmp := Compare(small, in, nil, y, DefaultCompare)
	if d, why := Decide(o, Tolerance); d != Passed || cmp.Mode != "all" || cmp.Count != small.OutputLen() {
		t.Errorf("all: %s %q, %+v, %+v", d, why, o, cmp)
	}
	cfg := DefaultCompare
	cfg.FullMax, cfg.Samples = 0, 100
	o, cmp = Compare(small, in, nil, y, cfg)
	if d, why := Decide(o, Tolerance); d != Passed || cmp.Mode != "sampled" || cmp.Count != 100 {
		t.Errorf("sampled: %s %q, %+v, %+v", d, why, o, cmp)
	}
}

func TestCompareCatches(t *testing.T) {
	in := MakeInputs(small, "rand", 7)
	n := small.OutputLen()

	wrong := gpuLike(small, in)
	wrong[n/2] += 1
	if o, _ := Compare(small, in, nil, wrong, DefaultCompare); !(o.RelL2 > Tolerance) {
		t.Errorf("one wrong output: rel_l2 %g", o.RelL2)
	}

	unwritten := gpuLike(small, in)
	for _, i := range []int{0, 17, n - 1} {
		unwritten[i] = math.Float32frombits(PoisonBits)
	}
	unwritten[5] = float32(math.NaN())
	o, _ := Compare(small, in, nil, unwritten, DefaultCompare)
	if o.NaN != 4 || o.Unwritten != 3 {
		t.Errorf("NaN %d, unwritten %d; want 4, 3", o.NaN, o.Unwritten)
	}
	if d, _ := Decide(o, Tolerance); d != Incorrect {
		t.Errorf("unwritten outputs: %s", d)
	}

	// A missing bias is an error far above fp32 rounding.
	nb := in
	nb.B = make([]float32, len(in.B))
	if o, _ := Compare(small, in, nil, gpuLike(small, nb), DefaultCompare); !(o.RelL2 > Tolerance) {
		t.Errorf("missing bias: rel_l2 %g", o.RelL2)
	}

	if o, _ := Compare(small, in, nil, make([]float32, n-1), DefaultCompare); o.Err == nil {
		t.Error("short output accepted")
	}
}

func TestMakeInputs(t *testing.T) {
	c := small
	c.In = [3]int{64, 64, 64} // several chunks: the parallel fill must not depend on the CPU count
	a := MakeInputs(c, "rand", 11)
	prev := runtime.GOMAXPROCS(1)
	b := MakeInputs(c, "rand", 11)
	runtime.GOMAXPROCS(prev)
	if !slices.Equal(a.X, b.X) || !slices.Equal(a.W, b.W) || !slices.Equal(a.B, b.B) {
		t.Fatal("same seed, different inputs")
	}
	if d := MakeInputs(c, "rand", 12); slices.Equal(a.X, d.X) {
		t.Fatal("different seeds, same inputs")
	}
	if len(a.X) != c.InputLen() || len(a.W) != c.WeightLen() || len(a.B) != c.OutChannels {
		t.Fatalf("lengths %d %d %d", len(a.X), len(a.W), len(a.B))
	}
	for _, v := range a.X {
		if !(v >= 0 && v < 1) {
			t.Fatalf("rand input %v outside [0, 1)", v)
		}
	}
	bound := float32(InitBound(c))
	for _, v := range append(append([]float32{}, a.W...), a.B...) {
		if !(v > -bound && v < bound) {
			t.Fatalf("parameter %v outside (-%v, %v)", v, bound, bound)
		}
	}
	if got := InitBound(c); math.Abs(got-1/math.Sqrt(2*18)) > 1e-15 { // Cout/groups = 2, 18 taps
		t.Errorf("InitBound = %v", got)
	}
	n := MakeInputs(c, "randn", 11)
	var sum, sq float64
	for _, v := range n.X {
		sum += float64(v)
		sq += float64(v) * float64(v)
	}
	mean := sum / float64(len(n.X))
	sd := math.Sqrt(sq/float64(len(n.X)) - mean*mean)
	if math.Abs(mean) > 0.01 || math.Abs(sd-1) > 0.01 {
		t.Errorf("randn: mean %v, sd %v", mean, sd)
	}
	if nb := MakeInputs(geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, In: [3]int{1, 1, 1}, Kernel: [3]int{1, 1, 1}, Groups: 1}, "rand", 1); nb.B != nil {
		t.Error("bias without Conv.Bias")
	}
}
