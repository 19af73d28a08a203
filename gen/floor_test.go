package gen

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"convtgen/gen/geom"
)

// level2Table is the summary table of the level-2 problems
// (../shared/level2-problems.md): per problem the shape read (the conv's
// input, #38 the raw input its pool reads first), the conv's weight
// (Cin, Cout, k), its GFLOP, the final output's MB and a second input's MB
// (#26's add_input), as the table prints them.
var level2Table = []struct {
	n              int
	in             [5]int
	cin, cout, k   int
	gflop, finalMB string
	secondMB       string
}{
	{3, [5]int{32, 32, 16, 32, 32}, 32, 64, 3, "57.98", "134.2", ""},
	{13, [5]int{16, 16, 32, 128, 128}, 16, 64, 3, "463.86", "67.1", ""},
	{15, [5]int{16, 16, 16, 32, 32}, 16, 32, 3, "7.25", "252.0", ""},
	{20, [5]int{16, 32, 16, 32, 32}, 32, 64, 3, "28.99", "536.9", ""},
	{26, [5]int{128, 32, 16, 16, 16}, 32, 64, 3, "57.98", "1073.7", "1073.7"},
	{34, [5]int{32, 32, 16, 32, 32}, 32, 64, 4, "137.44", "1073.7", ""},
	{38, [5]int{32, 32, 32, 64, 64}, 32, 64, 3, "57.98", "1073.7", ""},
	{49, [5]int{16, 32, 16, 32, 32}, 32, 64, 3, "28.99", "536.9", ""},
	{50, [5]int{128, 3, 16, 32, 32}, 3, 16, 3, "5.44", "118.1", ""},
	{58, [5]int{128, 3, 16, 32, 32}, 3, 16, 3, "5.44", "63.0", ""},
	{60, [5]int{128, 3, 16, 32, 32}, 3, 16, 3, "5.44", "1007.9", ""},
	{61, [5]int{16, 64, 32, 32, 32}, 64, 128, 3, "231.93", "322.0", ""},
	{72, [5]int{64, 3, 32, 32, 32}, 3, 16, 3, "5.44", "13.8", ""},
	{74, [5]int{16, 16, 16, 32, 32}, 16, 32, 3, "7.25", "33.6", ""},
	{77, [5]int{16, 64, 16, 32, 32}, 64, 128, 5, "536.87", "0.008", ""},
	{78, [5]int{16, 32, 32, 32, 32}, 32, 64, 5, "268.44", "0.064", ""},
	{89, [5]int{128, 3, 16, 32, 32}, 3, 16, 3, "5.44", "8.4", ""},
	{96, [5]int{128, 3, 16, 32, 32}, 3, 16, 3, "5.44", "0.008", ""},
	{100, [5]int{16, 64, 24, 48, 48}, 64, 128, 3, "391.38", "3474.8", ""},
}

// rounded parses a table number and the half unit of its last digit.
func rounded(t *testing.T, s string) (v, half float64) {
	t.Helper()
	if s == "" {
		return 0, 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	decimals := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		decimals = len(s) - i - 1
	}
	return v, 0.5 * math.Pow(10, -float64(decimals))
}

// TestLevel2Floor: each level-2 plan's floor counts the convolution's
// FLOPs and the bytes the fused forward must move (the input read once,
// the weight, a second input, the final output written once: never an
// intermediate), as the problems' table states them; the parameters
// besides (biases, norms' weights and statistics) are a few KB. Every
// other spec's is the convolution's own.
func TestLevel2Floor(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	byNumber := map[int]Loaded{}
	for _, l := range specs {
		name := l.Spec().Name
		if !strings.HasPrefix(name, "l2_") {
			for _, p := range l.Plans {
				if p.Epilogue.Chain.Any() || p.MinBytes() != p.Conv.MinBytes() {
					t.Errorf("%s: a spec of the convolution alone moves %v bytes, its convolution %v", name, p.MinBytes(), p.Conv.MinBytes())
				}
			}
			continue
		}
		n, err := strconv.Atoi(strings.Split(name, "_")[1])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byNumber[n] = l
	}
	if len(byNumber) != len(level2Table) {
		t.Errorf("%d level-2 specs, the table has %d problems", len(byNumber), len(level2Table))
	}
	const paramsMB = 0.01 // every level-2 problem's parameters besides the weight
	for _, w := range level2Table {
		l, ok := byNumber[w.n]
		if !ok {
			t.Errorf("#%d: no spec", w.n)
			continue
		}
		gflop, gHalf := rounded(t, w.gflop)
		final, fHalf := rounded(t, w.finalMB)
		second, sHalf := rounded(t, w.secondMB)
		inMB := 4 * float64(w.in[0]*w.in[1]*w.in[2]*w.in[3]*w.in[4]) / 1e6
		weightMB := 4 * float64(w.cin*w.cout*w.k*w.k*w.k) / 1e6
		wantMB := inMB + weightMB + final + second
		for _, p := range l.Plans {
			name := l.Spec().Name + "@" + p.Target.Name
			if !p.Epilogue.Chain.Any() {
				t.Errorf("%s: no chain", name)
			}
			if got := p.Spec.Problem.Conv.FLOPs() / 1e9; math.Abs(got-gflop) > gHalf {
				t.Errorf("%s: %.4f GFLOP, the table %s", name, got, w.gflop)
			}
			if got := 4 * float64(numel(p.Epilogue.Chain.Final)) / 1e6; math.Abs(got-final) > fHalf {
				t.Errorf("%s: final output %.4f MB, the table %s", name, got, w.finalMB)
			}
			got := p.MinBytes() / 1e6
			if got < wantMB-fHalf-sHalf || got > wantMB+fHalf+sHalf+paramsMB {
				t.Errorf("%s: moves %.4f MB, want input %.1f + weight %.3f + final %s + second input %s (+ < %v of parameters)",
					name, got, inMB, weightMB, w.finalMB, w.secondMB, paramsMB)
			}
			for _, precision := range []string{"fp32", "3xtf32"} {
				want := geom.FloorMS(p.Conv.FLOPs(), p.MinBytes(), precision)
				if p.Spectral != nil {
					// No convolution is computed: the plan's own FLOPs in fp32.
					want = geom.FloorMS(p.SpectralFLOPs(), p.MinBytes(), "fp32")
					if !(want < geom.FloorMS(p.Conv.FLOPs(), p.MinBytes(), "3xtf32")) {
						t.Errorf("%s: the spectral floor %v ms is no lower than the convolution's", name, want)
					}
				}
				if f := p.FloorMS(precision); f != want {
					t.Errorf("%s: floor %v ms at %s, want %v", name, f, precision, want)
				}
				// A file's floor on the H200: a Triton file's is the problem's;
				// an sm80 CUDA file computes 3xTF32 by mma.sync, at its rate.
				if f := p.FloorMSOn(geom.H200, "triton", precision); f != want {
					t.Errorf("%s: Triton file's floor %v ms at %s, want %v", name, f, precision, want)
				}
				cuda := want
				if p.Spectral == nil && !p.Target.WGMMA {
					cuda = geom.H200.MMASync().FloorMS(p.Conv.FLOPs(), p.MinBytes(), precision)
				}
				if f := p.FloorMSOn(geom.H200, "cuda", precision); f != cuda {
					t.Errorf("%s: CUDA file's floor %v ms at %s, want %v", name, f, precision, cuda)
				}
			}
		}
	}
	// Two bounds worked out by hand at 3xTF32 (165 TFLOP/s) and 4.3 TB/s:
	// #26 by its bytes (input 67.1 MB, add_input and the output 1073.7 MB
	// each), #100 by its FLOPs.
	for _, c := range []struct {
		n    int
		want float64
	}{
		{26, 1e3 * 4 * (128*32*16*16*16 + 32*64*27 + 64 + 2*128*64*32*32*32) / 4.3e12},
		{100, 1e3 * 2 * 16 * 64 * 128 * 27 * 24 * 48 * 48 / (495e12 / 3)},
	} {
		if got := byNumber[c.n].Plans[1].FloorMS("3xtf32"); math.Abs(got-c.want) > 1e-9*c.want {
			t.Errorf("#%d: floor %v ms, want %v", c.n, got, c.want)
		}
	}
	// #100's sm80 CUDA file by its FLOPs at mma.sync's 305 TFLOP/s.
	if got, want := byNumber[100].Plans[0].FloorMSOn(geom.H200, "cuda", "3xtf32"), 1e3*2*16*64*128*27*24*48*48/(305e12/3); math.Abs(got-want) > 1e-9*want {
		t.Errorf("#100 sm80 CUDA: floor %v ms, want %v", got, want)
	}
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
