package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// The fixture tree: testdata/specs holds three small specs of the
// convolution alone (rp_a fp32 and compute-bound, rp_b 3xtf32 and
// compute-bound, rp_c fp32 and memory-bound) and two level-2 specs (rp_l2a
// 3xtf32 and memory-bound, rp_l2b fp32 and compute-bound); testdata/gpu
// holds a harness run (e2e.json: every spec of the convolution alone on
// both backends with no target, read as sm90's, one incorrect row, one
// failed row with null times, and a row of a spec that no longer exists;
// rp_a's CUDA file for sm80 run through its PTX), a level-2 run
// (level2.json: rp_l2a on both targets, sm80's through its PTX and
// incorrect, rp_l2b on sm90, torch.compile timed, a row of rp_a that is not
// level 2's and one of a removed spec), a kernel-verifier run (kernels.json:
// a registered kernel, two random configurations of which one failed, one
// tuning candidate) and the commit.
const (
	fixtureRoot = "testdata"
	fixtureGPU  = "testdata/gpu"
	// The committed results, seen from this package's folder.
	repoRoot  = "../.."
	committed = "../../out"
)

// Each fixture problem's FLOPs and minimum bytes, worked out by hand from
// its spec (2*N*Cin*(Cout/g)*taps*D*H*W; 4 bytes per input, weight and
// output element).
var fixtureCost = map[string]struct{ flops, bytes float64 }{
	// N=2 Cin=64 Cout=64 k=3^3 in=8^3 (out 10^3)
	"rp_a": {2 * 2 * 64 * 64 * 27 * 512, 4 * (2*64*512 + 64*64*27 + 2*64*1000)},
	// N=2 Cin=32 Cout=64 k=3^3 in=8^3 (out 10^3)
	"rp_b": {2 * 2 * 32 * 64 * 27 * 512, 4 * (2*32*512 + 32*64*27 + 2*64*1000)},
	// N=4 Cin=16 Cout=16 k=1 in=32^3 (out 32^3)
	"rp_c": {2 * 4 * 16 * 16 * 1 * 32768, 4 * (4*16*32768 + 16*16 + 4*16*32768)},
}

// wantFloor is the floor as problems.md states it, in milliseconds, of a
// file: an sm80 CUDA file computes 3xTF32 by mma.sync, whose rate on the
// H200 is 305 TFLOP/s (PERF.md v35).
func wantFloor(name, backend, target, precision string) float64 {
	c := fixtureCost[name]
	peak := 67e12 // fp32 FFMA
	switch {
	case precision == "3xtf32" && backend == "cuda" && target == "sm80":
		peak = 305e12 / 3
	case precision == "3xtf32":
		peak = 495e12 / 3
	}
	return 1e3 * math.Max(c.flops/peak, c.bytes/4.3e12)
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

func buildFixture(t *testing.T) *Report {
	t.Helper()
	r, err := Build(fixtureRoot, fixtureGPU)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestBuildFixture(t *testing.T) {
	r := buildFixture(t)

	if r.GPU != "Fixture GPU X100" || r.Driver != "999.1.2" || r.Torch != "9.9.0+test" || r.CUDA != "99.1" ||
		r.CuDNN != "99100" || r.Date != "2030-01-02T03:04:05Z" {
		t.Errorf("environment = %q %q %q %q %q %q", r.GPU, r.Driver, r.Torch, r.CUDA, r.CuDNN, r.Date)
	}
	if r.Commit != "0123456789abcdef0123456789abcdef01234567" {
		t.Errorf("commit = %q (want it trimmed of its newline)", r.Commit)
	}

	type want struct {
		spec, backend, target, precision, disposition string
		speedup, strict                               float64 // 0: none
		mean                                          float64 // 0: no time
		kernelMS                                      float64
	}
	const nm = NotMeasured
	wants := []want{
		{"rp_a", "cuda", "sm80", "fp32", "passed", 2, 4, 0.010, 0},
		{"rp_a", "cuda", "sm90", "fp32", "passed", 2, 4, 0.010, 0.0097},
		{"rp_a", "triton", "sm80", "fp32", nm, 0, 0, 0, 0},
		{"rp_a", "triton", "sm90", "fp32", "passed", 4, 8, 0.005, 0},
		{"rp_b", "cuda", "sm80", "3xtf32", nm, 0, 0, 0, 0},
		{"rp_b", "cuda", "sm90", "3xtf32", "passed", 2, 6, 0.003, 0},
		{"rp_b", "triton", "sm80", "3xtf32", nm, 0, 0, 0, 0},
		{"rp_b", "triton", "sm90", "3xtf32", "incorrect", 6, 18, 0.001, 0},
		{"rp_c", "cuda", "sm80", "fp32", nm, 0, 0, 0, 0},
		{"rp_c", "cuda", "sm90", "fp32", "failed", 0, 0, 0, 0},
		{"rp_c", "triton", "sm80", "fp32", nm, 0, 0, 0, 0},
		{"rp_c", "triton", "sm90", "fp32", "passed", 0.5, 0.5, 0.008, 0},
	}
	if len(r.Rows) != len(wants) {
		t.Fatalf("%d rows, want %d (the removed spec's row left out): %+v", len(r.Rows), len(wants), r.Rows)
	}
	for i, w := range wants {
		row := r.Rows[i]
		name := w.spec + "/" + w.backend + "." + w.target
		if row.Spec != w.spec || row.Backend != w.backend || row.Target != w.target || row.Precision != w.precision || row.Disposition != w.disposition {
			t.Errorf("row %d = %s/%s.%s %s %s, want %s %s %s", i, row.Spec, row.Backend, row.Target, row.Precision, row.Disposition, name, w.precision, w.disposition)
			continue
		}
		if !near(row.SpeedupTF32, w.speedup) || !near(row.SpeedupStrict, w.strict) {
			t.Errorf("%s: speedups %v / %v, want %v / %v", name, row.SpeedupTF32, row.SpeedupStrict, w.speedup, w.strict)
		}
		floor := wantFloor(w.spec, w.backend, w.target, w.precision)
		if !near(row.FloorMS, floor) {
			t.Errorf("%s: floor %v ms, want %v", name, row.FloorMS, floor)
		}
		if w.mean == 0 {
			if row.FloorFraction != 0 || row.TimeMS != nil {
				t.Errorf("%s: no time, but floor fraction %v, time %+v", name, row.FloorFraction, row.TimeMS)
			}
		} else if !near(row.FloorFraction, floor/w.mean) {
			t.Errorf("%s: floor fraction %v, want %v", name, row.FloorFraction, floor/w.mean)
		}
		if !near(row.GFLOPs, fixtureCost[w.spec].flops/1e9) {
			t.Errorf("%s: %v GFLOP, want %v", name, row.GFLOPs, fixtureCost[w.spec].flops/1e9)
		}
		if !near(row.KernelMS, w.kernelMS) {
			t.Errorf("%s: kernel-only %v ms, want %v", name, row.KernelMS, w.kernelMS)
		}
		// Registers come from the verifier's item of the same spec and
		// target (its item names none: sm90's), CUDA only.
		if hasArch := row.Arch != nil; hasArch != (name == "rp_a/cuda.sm90") {
			t.Errorf("%s: arch %+v", name, row.Arch)
		}
	}
	if r.Rows[0].Ran != "compute_80 PTX (JIT)" {
		t.Errorf("rp_a/cuda.sm80 ran %q", r.Rows[0].Ran)
	}
	if a := r.Rows[1].Arch; a["sm_80"].Registers != 100 || a["sm_90"].Registers != 96 || a["sm_90"].SpillBytes != 8 {
		t.Errorf("rp_a/cuda arch = %+v", a)
	}

	// The floors: rp_a and rp_b are bound by arithmetic, at the FFMA and the
	// 3xTF32 rate respectively; rp_c by memory.
	if f := r.Rows[0].FloorMS; !near(f, 1e3*fixtureCost["rp_a"].flops/67e12) {
		t.Errorf("rp_a floor %v: want FLOPs at 67 TFLOP/s", f)
	}
	if f := r.Rows[5].FloorMS; !near(f, 1e3*fixtureCost["rp_b"].flops/(495e12/3)) {
		t.Errorf("rp_b floor %v: want FLOPs at 495/3 TFLOP/s", f)
	}
	if f := r.Rows[9].FloorMS; !near(f, 1e3*fixtureCost["rp_c"].bytes/4.3e12) {
		t.Errorf("rp_c floor %v: want bytes at 4.3 TB/s", f)
	}

	// Geometric means over passed rows only, per backend and target: cuda
	// sm90 2 and 2, triton sm90 4 and 0.5, cuda sm80 2.
	if len(r.GeoMean) != 3 || !near(r.GeoMean["cuda sm90"], 2) || !near(r.GeoMean["triton sm90"], math.Sqrt2) || !near(r.GeoMean["cuda sm80"], 2) {
		t.Errorf("geometric means %v, want cuda sm90 2, triton sm90 %v, cuda sm80 2", r.GeoMean, math.Sqrt2)
	}
	// Best per problem and target: rp_a cuda on sm80 (the only one); on
	// sm90 rp_a triton (faster of two passed), rp_b cuda (the faster
	// triton row is incorrect), rp_c triton (cuda failed).
	var best []string
	for _, b := range r.Best {
		best = append(best, b.Spec+"/"+b.Backend+"."+b.Target)
	}
	if got, want := strings.Join(best, " "), "rp_a/cuda.sm80 rp_a/triton.sm90 rp_b/cuda.sm90 rp_c/triton.sm90"; got != want {
		t.Errorf("best = %s, want %s", got, want)
	}
	if want := math.Cbrt(4 * 2 * 0.5); len(r.BestGeoMean) != 2 || !near(r.BestGeoMean["sm90"], want) || !near(r.BestGeoMean["sm80"], 2) {
		t.Errorf("best geometric means %v, want sm90 %v, sm80 2", r.BestGeoMean, want)
	}

	// Random sweeps per backend and precision; tuning candidates apart.
	if len(r.Sweeps) != 2 {
		t.Fatalf("sweeps = %+v", r.Sweeps)
	}
	s3, s32 := r.Sweeps[0], r.Sweeps[1]
	if s3.Backend != "cuda 3xtf32" || s3.Configs != 1 || s3.Passed != 1 || s3.MaxRelL2 != 9e-8 || len(s3.Failures) != 0 {
		t.Errorf("3xtf32 sweep = %+v", s3)
	}
	if s32.Backend != "cuda fp32" || s32.Configs != 1 || s32.Passed != 0 || s32.MaxRelL2 != 0 ||
		len(s32.Failures) != 1 || s32.Failures[0] != "rand_3_001: failed compile sm_80: registers spill to local memory" {
		t.Errorf("fp32 sweep = %+v", s32)
	}
	if len(r.Tuning) != 1 || r.Tuning[0].Spec != "rp_a_t1" || r.Tuning[0].Threads != 128 {
		t.Errorf("tuning = %+v", r.Tuning)
	}
}

func TestMarkdownFixture(t *testing.T) {
	md := Markdown(buildFixture(t))
	for _, s := range []string{
		"Measured on **Fixture GPU X100** (driver 999.1.2), torch 9.9.0+test, CUDA 99.1, cuDNN 99100, on 2030-01-02T03:04:05Z, commit `0123456789abcdef0123456789abcdef01234567`.",
		"![speedup over PyTorch default and fraction of floor](speedup.svg)",
		// Every row; floors 0.003380, 0.000686 and 0.003902 ms.
		"| rp_a | cuda | sm80 | fp32 | passed (compute_80 PTX (JIT)) | 1.2e-07 | yes / no | 0.010 / 0.010 | 0.020 / 0.019 | 0.040 / 0.039 | 2.00x | 4.00x | 0.003 | 34% | – | – |\n",
		"| rp_a | cuda | sm90 | fp32 | passed | 1.2e-07 | yes / no | 0.010 / 0.010 | 0.020 / 0.019 | 0.040 / 0.039 | 2.00x | 4.00x | 0.003 | 34% | 0.010 | 96, 8 |\n",
		"| rp_a | triton | sm80 | fp32 | not yet measured | – | – / – | – | – | – | – | – | 0.003 | – | – | – |\n",
		"| rp_a | triton | sm90 | fp32 | passed | 1.5e-07 | yes / yes | 0.005 / 0.005 | 0.020 / 0.019 | 0.040 / 0.039 | 4.00x | 8.00x | 0.003 | 68% | – | – |\n",
		"| rp_b | cuda | sm90 | 3xtf32 | passed | 2.0e-07 | yes / no | 0.003 / 0.003 | 0.006 / 0.006 | 0.018 / 0.018 | 2.00x | 6.00x | 0.001 | 23% | – | – |\n",
		"| rp_b | triton | sm90 | 3xtf32 | incorrect | 3.0e-04 | yes / no | 0.001 / 0.001 | 0.006 / 0.006 | 0.018 / 0.018 | 6.00x | 18.00x | 0.001 | 69% | – | – |\n",
		"| rp_c | cuda | sm90 | fp32 | failed | – | – / – | – | – | – | – | – | 0.004 | – | – | – |\n",
		"| rp_c | triton | sm90 | fp32 | passed | 5.0e-08 | yes / yes | 0.008 / 0.008 | 0.004 / 0.004 | 0.004 / 0.004 | 0.50x | 0.50x | 0.004 | 49% | – | – |\n",
		// The fixture's untargeted results (sm90 rows) are explained.
		"Results that name no target predate the per-target files",
		"Geometric-mean speedup over PyTorch default, cuda sm80: **2.00x**.\n",
		"Geometric-mean speedup over PyTorch default, cuda sm90: **2.00x**.\n",
		"Geometric-mean speedup over PyTorch default, triton sm90: **1.41x**.\n",
		"Best backend per problem, sm90: geometric mean **1.59x** over the default.\n",
		// The not-passed list, first line of each reason.
		"\nNot passed:\n- rp_b (triton sm90): incorrect — trial 0: relative L2 error 3.000e-04 > 1e-05\n- rp_c (cuda sm90): failed — compile error: ptxas fatal\n",
		"| cuda 3xtf32 | 1 | 1 | 9.0e-08 |\n| cuda fp32 | 1 | 0 | 0.0e+00 |\n",
		"- rand_3_001: failed compile sm_80: registers spill to local memory\n",
		"| rp_a_t1 | sm90 | 3xtf32 | {bm: 128, bn: 64, bk: 16, wm: 64, wn: 32} | 128 | passed | 3.0e-07 | 0.008 / 0.008 | 120 |\n",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("REPORT.md lacks %q", s)
		}
	}
	for _, s := range []string{"rp_removed", "second line", "more of the log", "ptxas info: more", "rand_3_000"} {
		if strings.Contains(md, s) {
			t.Errorf("REPORT.md shows %q", s)
		}
	}
	// Exactly one table line per row.
	if n := len(regexp.MustCompile(`(?m)^\| rp_[abc] \| (cuda|triton) \| sm[89]0 \|`).FindAllString(md, -1)); n != 12 {
		t.Errorf("%d problem rows, want 12", n)
	}
}

// svgElement is one element of a plot with its numeric attributes.
type svgElement struct {
	name  string
	attrs map[string]float64
	text  string
}

// parseSVG decodes the plot as XML (failing on malformed markup) and
// returns the root's width and every element below it.
func parseSVG(t *testing.T, svg string) (width float64, els []svgElement) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	d.Strict = true
	var stack []int // indices into els
	root := true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("plot is not well-formed XML: %v\n%s", err, svg)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := svgElement{name: tok.Name.Local, attrs: map[string]float64{}}
			for _, a := range tok.Attr {
				if v, err := strconv.ParseFloat(a.Value, 64); err == nil {
					e.attrs[a.Name.Local] = v
				}
			}
			if root {
				if e.name != "svg" || tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Fatalf("root element %v", tok.Name)
				}
				width, root = e.attrs["width"], false
				if width <= 0 || e.attrs["height"] <= 0 {
					t.Fatalf("svg size %v x %v", width, e.attrs["height"])
				}
			}
			els = append(els, e)
			stack = append(stack, len(els)-1)
		case xml.CharData:
			if len(stack) > 0 {
				els[stack[len(stack)-1]].text += string(tok)
			}
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		}
	}
	if root {
		t.Fatal("plot has no root element")
	}
	return width, els
}

// checkInside fails for any element that reaches outside [0, width]. A
// text's extent is estimated at half its font size per character, a low
// estimate for sans-serif.
func checkInside(t *testing.T, svg string) {
	t.Helper()
	width, els := parseSVG(t, svg)
	fontSize := 12.0
	for _, e := range els[1:] {
		var lo, hi float64
		switch e.name {
		case "rect":
			lo, hi = e.attrs["x"], e.attrs["x"]+e.attrs["width"]
			if e.attrs["width"] < 0 {
				t.Errorf("rect with negative width: %v", e.attrs)
			}
		case "line":
			lo, hi = math.Min(e.attrs["x1"], e.attrs["x2"]), math.Max(e.attrs["x1"], e.attrs["x2"])
		case "text":
			size := fontSize
			if s, ok := e.attrs["font-size"]; ok {
				size = s
			}
			lo = e.attrs["x"]
			hi = lo + 0.5*size*float64(len([]rune(e.text)))
		default:
			t.Errorf("unexpected element <%s>", e.name)
			continue
		}
		if lo < 0 || hi > width {
			t.Errorf("<%s> %v %q spans x %.0f..%.0f, outside the width %v", e.name, e.attrs, e.text, lo, hi, width)
		}
	}
}

func TestPlotFixture(t *testing.T) {
	r := buildFixture(t)
	svg := Plot(r)
	checkInside(t, svg)
	_, els := parseSVG(t, svg)
	var rects, texts int
	for _, e := range els {
		switch e.name {
		case "rect":
			rects++
		case "text":
			texts++
		}
	}
	// A background, then per best row one bar and two labels.
	if rects != 1+len(r.Best) || texts != 1+2*len(r.Best) {
		t.Errorf("%d rects and %d texts for %d best rows", rects, texts, len(r.Best))
	}
	for _, s := range []string{"rp_a (cuda sm80)", "rp_a (triton sm90)", "4.00x, 68% of floor", "rp_b (cuda sm90)", "2.00x, 23% of floor", "rp_c (triton sm90)", "0.50x, 49% of floor"} {
		if !strings.Contains(svg, s) {
			t.Errorf("plot lacks %q", s)
		}
	}
}

// TestPlotFitsLargeSpeedups: the bars are clamped below (0.25x) but not
// above, so a best speedup past about 15x pushes its label, and past about
// 70x its bar, beyond the plot's width.
func TestPlotFitsLargeSpeedups(t *testing.T) {
	r := &Report{}
	for i, s := range []float64{0.1, 1, 16, 100} {
		r.Best = append(r.Best, Row{HarnessResult: HarnessResult{Spec: "p" + strconv.Itoa(i), Backend: "cuda"}, SpeedupTF32: s, FloorFraction: 0.5})
	}
	checkInside(t, Plot(r))
}

// TestWriteNonFiniteSweepError: the verifier writes a relative error of
// NaN or +Inf (as strings) for a run with NaN or unwritten outputs; a
// random configuration like that must still give a report, report.json
// included (encoding/json refuses NaN and Inf float64s).
func TestWriteNonFiniteSweepError(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit")
	kernels, err := os.ReadFile(filepath.Join(fixtureGPU, "kernels.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The passed random configuration becomes an incorrect one whose
	// outputs were never written.
	old := `"disposition": "passed", "rel_l2": 9.0e-08,`
	if !bytes.Contains(kernels, []byte(old)) {
		t.Fatal("fixture changed: no passed random item")
	}
	kernels = bytes.Replace(kernels, []byte(old), []byte(`"disposition": "incorrect", "reason": "512 of 512 outputs never written (still NaN poison)", "rel_l2": "NaN",`), 1)
	if err := os.WriteFile(filepath.Join(dir, "kernels.json"), kernels, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sweeps[0].Passed != 0 || len(r.Sweeps[0].Failures) != 1 {
		t.Errorf("sweep = %+v", r.Sweeps[0])
	}
	if err := Write(r, t.TempDir()); err != nil {
		t.Errorf("Write: %v", err)
	}
}

func TestBuildNeedsE2E(t *testing.T) {
	if _, err := Build(fixtureRoot, t.TempDir()); err == nil || !strings.Contains(err.Error(), "no e2e.json") {
		t.Errorf("Build without e2e.json: %v", err)
	}
}

// TestWriteFixture: Write renders the three files, and report.json is the
// report.
func TestWriteFixture(t *testing.T) {
	r := buildFixture(t)
	dir := t.TempDir()
	if err := Write(r, dir); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"REPORT.md": Markdown(r), PlotFile: Plot(r)} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(got) != want {
			t.Errorf("%s: %v, content matches: %v", name, err, string(got) == want)
		}
	}
	data, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"gpu": "Fixture GPU X100"`, `"geomean_speedup_vs_default": {`, `"backend": "cuda fp32"`, `"spec": "rp_a_t1"`} {
		if !strings.Contains(string(data), s) {
			t.Errorf("report.json lacks %s", s)
		}
	}
}

// TestCommittedReportUpToDate: out/REPORT.md, out/speedup.svg and
// out/report.json are exactly what the committed results in out/gpu and
// the specs render to (run make report when this fails).
func TestCommittedReportUpToDate(t *testing.T) {
	r, err := Build(repoRoot, filepath.Join(committed, "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(r, dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"REPORT.md", PlotFile, "report.json"} {
		want, err := os.ReadFile(filepath.Join(committed, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("out/%s is not what out/gpu renders to; first difference: %s", name, firstDiff(string(want), string(got)))
		}
	}
	checkInside(t, Plot(r))
}

// firstDiff shows the first line where two texts differ.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var a, b string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			b = g[i]
		}
		if a != b {
			return "line " + strconv.Itoa(i+1) + ":\n committed: " + a + "\n rendered:  " + b
		}
	}
	return "none"
}

// TestExtraRandomRuns: random-kernels*.json files (runs of other seeds)
// join the kernel verifier's random tally.
func TestExtraRandomRuns(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	kernels, err := os.ReadFile(filepath.Join(fixtureGPU, "kernels.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The same run again, as another seed's: every random item counts twice.
	if err := os.WriteFile(filepath.Join(dir, "random-kernels-7.json"), kernels, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Sweeps) != 2 || r.Sweeps[0].Configs != 2 || r.Sweeps[0].Passed != 2 || r.Sweeps[1].Configs != 2 || len(r.Sweeps[1].Failures) != 2 {
		t.Errorf("sweeps = %+v", r.Sweeps)
	}
	if len(r.Tuning) != 1 {
		t.Errorf("tuning rows = %d; an extra random run must not add any", len(r.Tuning))
	}
}

// TestExtraTuningRuns: tune-kernels*.json files (tuning runs of other
// candidates) each add their candidates and their run to the tuning table.
func TestExtraTuningRuns(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	kernels, err := os.ReadFile(filepath.Join(fixtureGPU, "kernels.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's run holds one candidate: as two more tuning runs, three.
	for _, name := range []string{"tune-kernels.json", "tune-kernels-cp_async.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), kernels, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Tuning) != 3 || len(r.TuningRuns) != 3 {
		t.Errorf("tuning rows = %d from runs %q, want 3 from 3", len(r.Tuning), r.TuningRuns)
	}
}

// TestExtraHarnessSweeps: random-sweep*.json files (harness sweeps of
// other seeds) add their configurations to random.json's in one tally,
// failures named, and each run is listed.
func TestExtraHarnessSweeps(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	sweep := func(name string, results ...string) {
		data := `{"gpu": "test", "results": [` + strings.Join(results, ",") + `]}`
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	result := func(spec, disposition string, err float64) string {
		return fmt.Sprintf(`{"spec": %q, "backend": "triton", "disposition": %q, "max_rel_l2": %g}`, spec, disposition, err)
	}
	sweep("random.json", result("rand_1_000", "passed", 1e-7), result("rand_1_001", "passed", 2e-7))
	sweep("random-sweep-2.json", result("rand_2_000", "passed", 3e-7), result("rand_2_001", "incorrect", 0.5))
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got *Sweep
	for i := range r.Sweeps {
		if r.Sweeps[i].Backend == "triton end to end" {
			got = &r.Sweeps[i]
		}
	}
	if got == nil || got.Configs != 4 || got.Passed != 3 || len(got.Failures) != 1 || !strings.Contains(got.Failures[0], "rand_2_001") {
		t.Errorf("harness sweep tally = %+v, want 4 configurations, 3 passed, rand_2_001 failed", got)
	}
	// Each sweep is listed with its seed and size.
	for _, want := range []string{"harness, seed 1: 2 configurations", "harness, seed 2: 2 configurations"} {
		if !slices.ContainsFunc(r.SweepRuns, func(run string) bool { return strings.HasPrefix(run, want) }) {
			t.Errorf("sweep runs %q lack %q", r.SweepRuns, want)
		}
	}
}

// fixtureCopy copies the named files of the GPU fixture into a new folder.
func fixtureCopy(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(fixtureGPU, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// A row whose recorded file digest differs from the file now in out/ is
// marked as measured on an older file; a matching or missing digest is not.
func TestOlderFileRows(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(filepath.Join(root, "specs"), os.DirFS(filepath.Join(fixtureRoot, "specs"))); err != nil {
		t.Fatal(err)
	}
	current := []byte("# the rp_a submission now\n")
	// The fixture's results without a target are the sm90 files'.
	for _, backend := range []string{"cuda", "triton"} {
		writeFileT(t, filepath.Join(root, "out", "rp_a", backend+".sm90.py"), current)
	}
	data, err := os.ReadFile(filepath.Join(fixtureGPU, "e2e.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	for _, res := range run["results"].([]any) {
		res := res.(map[string]any)
		if res["target"] != nil {
			continue
		}
		switch res["spec"].(string) + "/" + res["backend"].(string) {
		case "rp_a/cuda":
			res["sha256"] = codeSHA256(filepath.Join(fixtureGPU, "e2e.json")) // some other file's
		case "rp_a/triton":
			res["sha256"] = codeSHA256(filepath.Join(root, "out", "rp_a", "triton.sm90.py"))
		}
	}
	dir := fixtureCopy(t, "commit", "kernels.json")
	data, err = json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "e2e.json"), data)
	r, err := Build(root, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if want := row.Spec+"/"+row.Backend+"."+row.Target == "rp_a/cuda.sm90"; row.OlderFile != want {
			t.Errorf("%s/%s.%s: older file %v, want %v", row.Spec, row.Backend, row.Target, row.OlderFile, want)
		}
	}
	if n := strings.Count(Markdown(r), "| passed (older file) |"); n != 1 {
		t.Errorf("%d rows marked (older file) in the markdown, want 1", n)
	}
}

// The digest skips the module docstring, the same bytes the harness hashes.
func TestCodeSHA256(t *testing.T) {
	dir := t.TempDir()
	digest := func(text string) string {
		path := filepath.Join(dir, "s.py")
		writeFileT(t, path, []byte(text))
		return codeSHA256(path)
	}
	code := "\nimport torch\nX = 1\n"
	a := digest("# header\n\"\"\"Prose.\"\"\"" + code)
	if b := digest("# header\n\"\"\"Other prose,\nlonger.\"\"\"" + code); a != b {
		t.Errorf("a docstring edit changed the digest")
	}
	if c := digest("# header\n\"\"\"Prose.\"\"\"" + code + "Y = 2\n"); c == a {
		t.Errorf("a code edit left the digest")
	}
	sum := sha256.Sum256([]byte(code))
	if want := hex.EncodeToString(sum[:]); a != want {
		t.Errorf("digest %s, want the SHA-256 of the code after the docstring %s", a, want)
	}
	if d := digest("X = 1\n"); d == "" || d == a {
		t.Errorf("no docstring: digest %q", d)
	}
}

func writeFileT(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestBigRun: bigcheck.py's big.json becomes a section with a row per
// submission, a failure with its first line.
func TestBigRun(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	big := `{"gpu": "Fixture GPU X100", "torch": "9.9.0+test", "date": "2030-01-02", "commit": "0123abc",
	 "results": [{"spec": "big_a", "backend": "cuda", "output_elements": 4294901760, "poisoned": true, "nan_free": true,
	              "samples": 1000000, "max_err": 1.5e-07, "bad": 0, "ok": true},
	             {"spec": "big_a", "backend": "triton", "ok": false, "error": "RuntimeError: launch failed\nmore"}]}`
	if err := os.WriteFile(filepath.Join(dir, "big.json"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	if r.Big == nil || len(r.Big.Results) != 2 || r.Big.Results[0].OutputElements != 4294901760 {
		t.Fatalf("big = %+v", r.Big)
	}
	md := Markdown(r)
	for _, want := range []string{
		"## Tensors of 2^31 elements or more",
		"on Fixture GPU X100, 2030-01-02, torch 9.9.0+test, commit `0123abc`",
		"| big_a | cuda | 4294901760 | true | true | 1000000 | 0 | 1.5e-07 | passed |",
		"| big_a | triton | 0 | false | false | 0 | 0 | 0.0e+00 | failed: RuntimeError: launch failed |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q", want)
		}
	}
	if r, err := Build(fixtureRoot, fixtureCopy(t, "e2e.json", "commit", "kernels.json")); err != nil || r.Big != nil {
		t.Errorf("without big.json: big = %+v, err %v", r.Big, err)
	}
}

// TestCommittedResultsAllRead: out/gpu holds only what the report reads;
// leaving out any one of its files changes what it renders (a log or a
// stale part left there would not).
func TestCommittedResultsAllRead(t *testing.T) {
	src := filepath.Join(committed, "gpu")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	render := func(dir string) []byte {
		t.Helper()
		r, err := Build(repoRoot, dir)
		if err != nil {
			t.Fatal(err)
		}
		data, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	all := render(src)
	for _, skip := range entries {
		dir := t.TempDir()
		for _, e := range entries {
			if e.Name() == skip.Name() {
				continue
			}
			data, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, e.Name()), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if skip.Name() == "e2e.json" {
			if _, err := Build(repoRoot, dir); err == nil {
				t.Errorf("without e2e.json the report builds")
			}
			continue
		}
		if bytes.Equal(render(dir), all) {
			t.Errorf("out/gpu/%s: the report renders the same without it (not a file it reads)", skip.Name())
		}
	}
}

// Each level-2 fixture's FLOPs and the bytes its fused forward must move,
// worked out by hand from its spec: the input, the weight, the bias, the
// tensors the ops read (4 bytes an element; num_batches_tracked 8) and the
// final output.
var level2Cost = map[string]struct{ flops, bytes float64 }{
	// N=4 Cin=8 Cout=16 k=3^3 in=16^3, stride 2: out 32^3; + add_input
	// (4,16,32^3), ReLU, max pool 2: final (4,16,16^3).
	"rp_l2a": {2 * 4 * 8 * 16 * 27 * 4096, 4 * (4*8*4096 + 8*16*27 + 16 + 4*16*32768 + 4*16*4096)},
	// N=2 Cin=32 Cout=64 k=3^3 in=8^3, no bias; BatchNorm (weight, bias,
	// running mean and variance of 64, the int64 count), the mean over the
	// positions: final (2,64,1,1,1).
	"rp_l2b": {2 * 2 * 32 * 64 * 27 * 512, 4*(2*32*512+32*64*27+4*64+2*64) + 8},
}

func TestLevel2Fixture(t *testing.T) {
	r := buildFixture(t)
	l2 := r.Level2
	if l2.GPU != "Fixture GPU X200" || l2.Driver != "999.2.3" || l2.Torch != "9.9.1+test" || l2.CUDA != "99.2" || l2.CuDNN != "99200" || l2.Date != "2030-02-03T04:05:06Z" {
		t.Errorf("level-2 run = %+v", l2)
	}
	type want struct {
		spec, target, precision, disposition string
		mean, eager, compile                 float64 // speedups 0: none
		floorBound                           string  // flops or bytes
	}
	wants := []want{
		{"rp_l2a", "sm80", "3xtf32", "incorrect", 0.001, 8, 2, "bytes"},
		{"rp_l2a", "sm90", "3xtf32", "passed", 0.004, 2, 0.5, "bytes"},
		{"rp_l2b", "sm80", "fp32", NotMeasured, 0, 0, 0, "flops"},
		{"rp_l2b", "sm90", "fp32", "passed", 0.002, 8, 2, "flops"},
	}
	if len(l2.Rows) != len(wants) {
		t.Fatalf("%d level-2 rows, want %d (rp_a's and the removed spec's left out): %+v", len(l2.Rows), len(wants), l2.Rows)
	}
	for i, w := range wants {
		row := l2.Rows[i]
		name := w.spec + "/cuda." + w.target
		if row.Spec != w.spec || row.Backend != "cuda" || row.Target != w.target || row.Precision != w.precision || row.Disposition != w.disposition {
			t.Errorf("level-2 row %d = %s/%s.%s %s %s, want %s %s %s", i, row.Spec, row.Backend, row.Target, row.Precision, row.Disposition, name, w.precision, w.disposition)
			continue
		}
		c := level2Cost[w.spec]
		peak := 67e12
		if w.precision == "3xtf32" {
			peak = 495e12 / 3
		}
		floor := 1e3 * c.bytes / 4.3e12
		if w.floorBound == "flops" {
			floor = 1e3 * c.flops / peak
		}
		if !near(row.MinBytes, c.bytes) || !near(row.GFLOPs, c.flops/1e9) || !near(row.FloorMS, floor) {
			t.Errorf("%s: %v bytes, %v GFLOP, floor %v ms; want %v, %v, %v (bound by its %s)", name, row.MinBytes, row.GFLOPs, row.FloorMS, c.bytes, c.flops/1e9, floor, w.floorBound)
		}
		if max(c.flops/peak, c.bytes/4.3e12) != map[string]float64{"flops": c.flops / peak, "bytes": c.bytes / 4.3e12}[w.floorBound] {
			t.Errorf("%s: the fixture is not bound by its %s", name, w.floorBound)
		}
		if !near(row.SpeedupTF32, w.eager) || !near(row.SpeedupCompile, w.compile) {
			t.Errorf("%s: speedups %v over eager, %v over torch.compile; want %v, %v", name, row.SpeedupTF32, row.SpeedupCompile, w.eager, w.compile)
		}
		if w.mean > 0 && !near(row.FloorFraction, floor/w.mean) {
			t.Errorf("%s: floor fraction %v, want %v", name, row.FloorFraction, floor/w.mean)
		}
		if row.FromE2E {
			t.Errorf("%s: marked from the e2e run", name)
		}
	}
	// The gates: sm90's faster backend is 2x and 8x eager, 0.5x and 2x
	// torch.compile; sm80 has no passed row.
	if b, ok := l2.Best["sm90"]; len(l2.Best) != 1 || !ok || b.Problems != 2 || !near(b.GeoMean, 4) || b.BeatEager != 2 || b.WithCompile != 2 || b.BeatCompile != 1 {
		t.Errorf("faster backend per problem %+v, want sm90 alone: 2 problems, 4x, 2 faster than eager, 1 of 2 faster than torch.compile", l2.Best)
	}
	if md := Markdown(r); !strings.Contains(md, "- the faster backend per problem, sm90: over eager **4.00x** (geometric mean over 2 problems), faster on 2 of 2; faster than torch.compile on **1 of 2** timed.\n") {
		t.Errorf("REPORT.md has no line for the faster backend's gates")
	}
	// level2.json's row of rp_a (a convolution alone) is not level 1's
	// either: rp_a/cuda.sm90 keeps e2e.json's time.
	for _, row := range r.Rows {
		if row.Spec == "rp_a" && row.Backend == "cuda" && row.Target == "sm90" && (row.TimeMS.Mean != 0.01 || row.RefCompileMS != nil) {
			t.Errorf("rp_a/cuda.sm90 took level2.json's result: %+v", row.HarnessResult)
		}
		if strings.HasPrefix(row.Spec, "rp_l2") {
			t.Errorf("level-1 table has %s", row.Spec)
		}
	}
	// Summaries over passed rows only: sm80 none (rp_l2a incorrect, rp_l2b
	// not measured); sm90 eager 2 and 8, torch.compile 0.5 and 2.
	wantSum := []Level2Summary{
		{Backend: "cuda", Target: "sm80", Files: 2, NotMeasured: 1},
		{Backend: "cuda", Target: "sm90", Files: 2, Passed: 2, VsEager: 2, BeatEager: 2, GeoMeanEager: 4, VsCompile: 2, BeatCompile: 1, GeoMeanCompile: 1},
	}
	if len(l2.Summary) != 2 {
		t.Fatalf("summary %+v", l2.Summary)
	}
	for i, w := range wantSum {
		g := l2.Summary[i]
		if !near(g.GeoMeanEager, w.GeoMeanEager) || !near(g.GeoMeanCompile, w.GeoMeanCompile) {
			t.Errorf("summary %s %s: geometric means %v, %v; want %v, %v", g.Backend, g.Target, g.GeoMeanEager, g.GeoMeanCompile, w.GeoMeanEager, w.GeoMeanCompile)
		}
		g.GeoMeanEager, g.GeoMeanCompile, w.GeoMeanEager, w.GeoMeanCompile = 0, 0, 0, 0
		if g != w {
			t.Errorf("summary %+v, want %+v", g, w)
		}
	}

	md := Markdown(r)
	level1 := md[:strings.Index(md, "## Level 2")]
	for _, s := range []string{
		"## Level 2: the convolution and the ops after it\n\nMeasured on **Fixture GPU X200** (driver 999.2.3), torch 9.9.1+test, CUDA 99.2, cuDNN 99200, on 2030-02-03T04:05:06Z\n",
		// The sm80 wording is the level-1 section's.
		sm80PTX,
		"No Triton rows: these specs list `backends: [cuda]`, or the Triton backend cannot express their ops yet",
		"| problem | backend | target | precision | result | rel L2 vs fp64 | allclose 1e-2 / 1e-4 | ms mean / median | eager ms | strict fp32 ms | torch.compile ms | vs eager | vs torch.compile | floor ms | floor |\n",
		// Floors 0.002320 and 0.001690 ms.
		"| rp_l2a | cuda | sm80 | 3xtf32 | incorrect (compute_80 PTX, JIT-compiled for 9.0) | 2.0e-03 | yes / no | 0.001 / 0.001 | 0.008 / 0.008 | 0.016 / 0.016 | 0.002 / 0.002 | 8.00x | 2.00x | 0.002 | 232% |\n",
		"| rp_l2a | cuda | sm90 | 3xtf32 | passed | 3.0e-07 | yes / no | 0.004 / 0.004 | 0.008 / 0.008 | 0.016 / 0.016 | 0.002 / 0.002 | 2.00x | 0.50x | 0.002 | 58% |\n",
		"| rp_l2b | cuda | sm80 | fp32 | not yet measured | – | – / – | – | – | – | – | – | – | 0.002 | – |\n",
		"| rp_l2b | cuda | sm90 | fp32 | passed | 2.0e-07 | yes / yes | 0.002 / 0.002 | 0.016 / 0.016 | 0.020 / 0.020 | 0.004 / 0.004 | 8.00x | 2.00x | 0.002 | 85% |\n",
		"- cuda sm80: 0 of 2 passed, 1 not yet measured.\n",
		"- cuda sm90: 2 of 2 passed; over eager **4.00x** (geometric mean), faster on 2 of 2; over torch.compile **1.00x**, faster on 1 of 2.\n",
		"\nNot passed:\n- rp_l2a (cuda sm80): incorrect — trial 0: relative L2 error 2.000e-03 > 1e-05\n",
	} {
		if !strings.Contains(md[len(level1):], s) {
			t.Errorf("level-2 section lacks %q", s)
		}
	}
	if !strings.Contains(level1, sm80PTX) {
		t.Errorf("level-1 section lacks %q", sm80PTX)
	}
	for _, s := range []string{"rp_l2", "rp_l2_removed", "second line", "(e2e run)"} {
		if strings.Contains(level1, s) || (s != "rp_l2" && strings.Contains(md, s)) {
			t.Errorf("REPORT.md shows %q out of place", s)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^\| rp_l2[ab] \| cuda \| sm[89]0 \|`).FindAllString(md, -1)); n != 4 {
		t.Errorf("%d level-2 rows in the markdown, want 4", n)
	}
}

// TestLevel2FromE2E: e2e.json's results of level-2 files (the e2e stage
// runs every submission) fill the files level2.json lacks, marked, with no
// torch.compile time; level2.json's win where both have one. Without
// level2.json they are the section's only results.
func TestLevel2FromE2E(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json", "level2.json")
	data, err := os.ReadFile(filepath.Join(fixtureGPU, "e2e.json"))
	if err != nil {
		t.Fatal(err)
	}
	var run map[string]any
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	result := func(spec, target string, mean float64) map[string]any {
		return map[string]any{"spec": spec, "backend": "cuda", "target": target, "disposition": "passed", "max_rel_l2": 1e-7,
			"time_ms": map[string]float64{"mean": mean, "median": mean}, "ref_default_ms": map[string]float64{"mean": 0.006, "median": 0.006}}
	}
	run["results"] = append(run["results"].([]any), result("rp_l2b", "sm80", 0.003), result("rp_l2a", "sm90", 0.1))
	data, err = json.Marshal(run)
	if err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "e2e.json"), data)
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Level2.Rows) != 4 {
		t.Fatalf("level-2 rows %+v", r.Level2.Rows)
	}
	a90, b80 := r.Level2.Rows[1], r.Level2.Rows[2]
	if a90.FromE2E || a90.TimeMS.Mean != 0.004 {
		t.Errorf("rp_l2a/cuda.sm90 = %+v, want level2.json's", a90)
	}
	if !b80.FromE2E || b80.Disposition != "passed" || !near(b80.SpeedupTF32, 2) || b80.SpeedupCompile != 0 {
		t.Errorf("rp_l2b/cuda.sm80 = %+v, want e2e.json's, 2x over eager, no torch.compile", b80)
	}
	if s := r.Level2.Summary[0]; s.Passed != 1 || s.VsEager != 1 || s.VsCompile != 0 || !near(s.GeoMeanEager, 2) {
		t.Errorf("sm80 summary %+v", s)
	}
	md := Markdown(r)
	for _, s := range []string{
		"| rp_l2b | cuda | sm80 | fp32 | passed (e2e run) | 1.0e-07 | – / – | 0.003 / 0.003 | 0.006 / 0.006 | – | – | 2.00x | – |",
		"Rows marked (e2e run) are from the run named at the top (`e2e.json`), which timed no `torch.compile`.",
		"- cuda sm80: 1 of 2 passed; over eager **2.00x** (geometric mean), faster on 1 of 1.\n",
	} {
		if !strings.Contains(md, s) {
			t.Errorf("markdown lacks %q", s)
		}
	}

	if err := os.Remove(filepath.Join(dir, "level2.json")); err != nil {
		t.Fatal(err)
	}
	if r, err = Build(fixtureRoot, dir); err != nil {
		t.Fatal(err)
	}
	var from []string
	for _, row := range r.Level2.Rows {
		if row.Disposition != NotMeasured {
			from = append(from, row.Spec+"/"+row.Target+" "+strconv.FormatBool(row.FromE2E))
		}
	}
	if got := strings.Join(from, ", "); got != "rp_l2a/sm90 true, rp_l2b/sm80 true" {
		t.Errorf("measured level-2 rows without level2.json: %s", got)
	}
	if md := Markdown(r); !strings.Contains(md, "No level-2 run yet (`verify/gpu-check.sh level2` writes `level2.json`).\n") || strings.Contains(md, "Fixture GPU X200") {
		t.Errorf("the level-2 section without level2.json:\n%s", md[strings.Index(md, "## Level 2"):])
	}
}

// TestLevel2TritonNote: the section says once why it has no Triton rows,
// and not when it has some.
func TestLevel2TritonNote(t *testing.T) {
	const note = "No Triton rows"
	if n := strings.Count(Markdown(buildFixture(t)), note); n != 1 {
		t.Errorf("the fixture's report says %q %d times, want once", note, n)
	}
	r := &Report{Level2: Level2{Rows: []Row{
		{HarnessResult: HarnessResult{Spec: "x", Backend: "cuda", Target: "sm90", Disposition: NotMeasured}},
		{HarnessResult: HarnessResult{Spec: "x", Backend: "triton", Target: "sm90", Disposition: NotMeasured}},
	}}}
	if md := Markdown(r); strings.Contains(md, note) || !strings.Contains(md, "| x | triton | sm90 |") {
		t.Errorf("with a Triton row:\n%s", md)
	}
}

func TestNumericLess(t *testing.T) {
	names := []string{"l2_13_b", "l2_100_a", "l2_3_c", "l2_03_d", "l2_3_b", "l2_x", "l2_13"}
	slices.SortStableFunc(names, func(a, b string) int {
		switch {
		case numericLess(a, b):
			return -1
		case numericLess(b, a):
			return 1
		}
		return 0
	})
	if got, want := strings.Join(names, " "), "l2_3_b l2_3_c l2_03_d l2_13 l2_13_b l2_100_a l2_x"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestLevel2CompileCarried: a level-2 run that timed no torch.compile
// takes each problem's from level2-compile.json (an earlier run), marked
// with that run's date; a row's own time wins.
func TestLevel2CompileCarried(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json", "level2.json")
	data, err := os.ReadFile(filepath.Join(fixtureGPU, "level2.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "level2-compile.json"), bytes.ReplaceAll(data, []byte(`"date": "`), []byte(`"date": "earlier `)))
	var run map[string]any
	if err := json.Unmarshal(data, &run); err != nil {
		t.Fatal(err)
	}
	for _, r := range run["results"].([]any) {
		if r := r.(map[string]any); r["spec"] == "rp_l2a" {
			r["ref_compile_ms"] = nil
		}
	}
	if data, err = json.Marshal(run); err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "level2.json"), data)
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	carried := 0
	for _, row := range r.Level2.Rows {
		switch {
		case row.Spec == "rp_l2a" && row.Disposition != NotMeasured:
			carried++
			if !strings.HasPrefix(row.CompileFrom, "earlier ") || row.RefCompileMS == nil || row.RefCompileMS.Mean != 0.002 || row.SpeedupCompile == 0 {
				t.Errorf("%s/%s: compile %+v from %q, speedup %v; want the earlier run's 0.002", row.Spec, row.Target, row.RefCompileMS, row.CompileFrom, row.SpeedupCompile)
			}
		case row.CompileFrom != "":
			t.Errorf("%s/%s took a carried compile time over its own", row.Spec, row.Target)
		}
	}
	if carried != 2 {
		t.Errorf("%d rp_l2a rows carried a compile time, want 2", carried)
	}
	if md := Markdown(r); !strings.Contains(md, "0.002 / 0.002 †") || !strings.Contains(md, "† torch.compile timed in an earlier run (`level2-compile.json`, earlier ") {
		t.Errorf("markdown does not mark the carried times:\n%s", md)
	}
	// Times from another GPU model never stand beside the run's.
	run["gpu"] = "Another GPU"
	if data, err = json.Marshal(run); err != nil {
		t.Fatal(err)
	}
	writeFileT(t, filepath.Join(dir, "level2-compile.json"), data)
	if _, err := Build(fixtureRoot, dir); err == nil || !strings.Contains(err.Error(), "one GPU model a table") {
		t.Errorf("torch.compile times of another GPU model: err %v, want a refusal", err)
	}
}

// TestNoTritonListed: the level-2 section names exactly the problems
// without a Triton file, each with a reason: none of them has a Triton
// row, and every level-2 problem without one is named.
func TestNoTritonListed(t *testing.T) {
	r, err := Build(repoRoot, filepath.Join(committed, "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	triton := map[string]bool{}
	specs := map[string]bool{}
	for _, row := range r.Level2.Rows {
		specs[row.Spec] = true
		if row.Backend == "triton" {
			triton[row.Spec] = true
		}
	}
	listed := map[string]bool{}
	for _, n := range r.Level2.NoTriton {
		listed[n.Spec] = true
		if n.Why == "" || triton[n.Spec] {
			t.Errorf("%s: listed without a Triton file (%q), Triton rows %t", n.Spec, n.Why, triton[n.Spec])
		}
	}
	for s := range specs {
		if !triton[s] && !listed[s] {
			t.Errorf("%s: no Triton row and not listed", s)
		}
	}
	// Every level-2 problem has a Triton file today: a planted refusal
	// must be listed with its reason.
	planted := noTritonOf(t, "l2_61_relu_groupnorm", "no Triton kernel for a planted step")
	if len(planted) != 1 || planted[0].Spec != "l2_61_relu_groupnorm" || !strings.Contains(planted[0].Why, "planted") {
		t.Errorf("a planted refusal: listed %+v", planted)
	}
}

// TestZooSection: the zoo's specs (specs/zoo/) get a section of their own
// from zoo.json: the faster backend per shape and target, and the gate's
// tallies (strict fp32 always; the default only where cuDNN's default runs
// under a third of the TF32 rate).
func TestZooSection(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	result := func(backend, target string, ms, def, strict float64) string {
		return fmt.Sprintf(`{"spec": "rp_z", "backend": %q, "target": %q, "disposition": "passed", "reason": "", "max_rel_l2": 1e-7, "trials": 5,
			"time_ms": {"mean": %g, "median": %g}, "ref_default_ms": {"mean": %g, "median": %g}, "ref_strict_ms": {"mean": %g, "median": %g}}`,
			backend, target, ms, ms, def, def, strict, strict)
	}
	// sm80: cuDNN's default is slow (well under a third of the TF32 rate);
	// sm90: it runs above it (0.0005 ms), so only strict fp32 is a gate there.
	writeFileT(t, filepath.Join(dir, "zoo.json"), []byte(`{"gpu": "Fixture GPU X100", "driver": "999.1.2", "date": "2030-01-03T00:00:00Z", "results": [`+
		strings.Join([]string{
			// Measured on code other than out/'s now: marked older.
			strings.Replace(result("cuda", "sm80", 0.5, 1.0, 2.0), `"trials"`, `"sha256": "0123", "trials"`, 1), result("triton", "sm80", 0.8, 1.0, 2.0),
			result("cuda", "sm90", 0.004, 0.0005, 0.003), result("triton", "sm90", 0.002, 0.0005, 0.003),
		}, ",")+`]}`))
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range r.Rows {
		if row.Spec == "rp_z" {
			t.Fatalf("a zoo shape in the main table: %+v", row)
		}
	}
	if len(r.Zoo.Best) != 2 || r.Zoo.Best[0].Backend != "cuda" || r.Zoo.Best[1].Backend != "triton" {
		t.Fatalf("zoo best rows = %+v, want cuda on sm80, triton on sm90", r.Zoo.Best)
	}
	want := []ZooSummary{
		{Target: "sm80", Shapes: 1, Measured: 1, BeatStrict: 1, SlowDefault: 1, BeatDefault: 1, GeoMean: 2, Backends: map[string]int{"cuda": 1}, ExactPeak: geom.MMASyncTF32 / 3},
		{Target: "sm90", Shapes: 1, Measured: 1, BeatStrict: 1, SlowDefault: 0, BeatDefault: 0, GeoMean: 0.25, Backends: map[string]int{"triton": 1}, ExactPeak: geom.TF32x3FLOPS},
	}
	if fmt.Sprint(r.Zoo.Summary) != fmt.Sprint(want) {
		t.Errorf("zoo summary = %+v\nwant %+v", r.Zoo.Summary, want)
	}
	md := Markdown(r)
	for _, s := range []string{"## The zoo", "| rp_z | sm90 | ", "at least strict fp32's speed on **1 of 1**", "over the default **0.25x**", "| cuda | 0.500 | 0.500 (older file) | 0.800 |", "A time marked (older file)"} {
		if !strings.Contains(md, s) {
			t.Errorf("REPORT.md lacks %q", s)
		}
	}
	if plot := ZooPlot(r); strings.Count(plot, "<title>rp_z") != 2 {
		t.Errorf("zoo plot has %d points, want 2", strings.Count(plot, "<title>rp_z"))
	}
	// cuDNN's default at 130 TFLOP/s, under a third of the TF32 rate and
	// over 3xTF32 at mma.sync's rate, and both files slower: on sm80 a miss
	// no exact kernel of its CUDA file could avoid, and said so; on sm90
	// (wgmma's 165) an ordinary miss.
	def := r.Zoo.Best[0].GFLOPs * 1e9 / 130e12 * 1e3
	writeFileT(t, filepath.Join(dir, "zoo.json"), []byte(`{"gpu": "Fixture GPU X100", "driver": "999.1.2", "date": "2030-01-03T00:00:00Z", "results": [`+
		strings.Join([]string{result("cuda", "sm80", 2*def, def, 4*def), result("triton", "sm80", 3*def, def, 4*def),
			result("cuda", "sm90", 2*def, def, 4*def), result("triton", "sm90", 3*def, def, 4*def)}, ",")+`]}`))
	if r, err = Build(fixtureRoot, dir); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"[rp_z]", "[]"} {
		if s := r.Zoo.Summary[i]; s.SlowDefault != 1 || s.BeatDefault != 0 || fmt.Sprint(s.BeyondPeak) != want {
			t.Errorf("%s at 130 TFLOP/s: %d slow defaults, %d beaten, beyond the exact peak %v; want 1, 0, %s", s.Target, s.SlowDefault, s.BeatDefault, s.BeyondPeak, want)
		}
	}
	if md := Markdown(r); !strings.Contains(md, "1 ask for more than 3xTF32's peak in this target's CUDA file (101.7 TFLOP/s), which no exact kernel there reaches: rp_z.") ||
		strings.Count(md, "ask for more than 3xTF32's peak") != 1 {
		t.Errorf("REPORT.md does not name sm80's miss beyond the exact peak alone:\n%s", md[strings.Index(md, "## The zoo"):])
	}
	// Without zoo.json the shapes are listed as not yet measured.
	os.Remove(filepath.Join(dir, "zoo.json"))
	if r, err = Build(fixtureRoot, dir); err != nil || len(r.Zoo.Missing) != 2 {
		t.Errorf("without zoo.json: missing %v (%v), want both targets of rp_z", r.Zoo.Missing, err)
	}
}

// noTritonOf is noTriton over the repository's specs with spec name's
// plans leaving Triton out for why.
func noTritonOf(t *testing.T, name, why string) []NoTriton {
	t.Helper()
	specs, err := gen.LoadAll(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range specs {
		if l.Spec().Name == name {
			for _, p := range l.Plans {
				p.TritonLeftOut = why
			}
		}
	}
	return noTriton(specs)
}

// The regression specs' rows are listed with the committed level-1 run but
// count in no geometric mean: the means are those of the problems alone.
func TestRegressionRowsNotCounted(t *testing.T) {
	r, err := Build(repoRoot, filepath.Join(committed, "gpu"))
	if err != nil {
		t.Fatal(err)
	}
	logSum, count, listed := map[string]float64{}, map[string]int{}, 0
	for _, row := range r.Rows {
		if row.Regression != strings.HasPrefix(row.Spec, "regress_") {
			t.Errorf("%s: regression %v", row.Spec, row.Regression)
		}
		if row.Regression {
			listed++
			continue
		}
		if row.Disposition == "passed" && row.SpeedupTF32 > 0 {
			logSum[row.Backend+" "+row.Target] += math.Log(row.SpeedupTF32)
			count[row.Backend+" "+row.Target]++
		}
	}
	if listed == 0 {
		t.Fatal("no regression rows in the committed run: nothing checked")
	}
	// Every committed result names its target: no legacy sentence.
	if md := Markdown(r); strings.Contains(md, "Results that name no target") {
		t.Error("REPORT.md explains untargeted results, but the committed run names every target")
	}
	for key, s := range logSum {
		if want := math.Exp(s / float64(count[key])); !near(r.GeoMean[key], want) {
			t.Errorf("%s: geometric mean %v, want %v over the problems alone", key, r.GeoMean[key], want)
		}
	}
	for _, row := range r.Best {
		if row.Regression {
			t.Errorf("best rows hold regression spec %s", row.Spec)
		}
	}
}

// TestZooRivals: tuning runs over the zoo (make tune UNDER=specs/zoo/
// TOP=n, gpu-check's tune stage) set each target's choice against the
// candidates timed beside it; failed ones, and ones over the tuning error
// bound, are no rivals. Runs of one GPU pool: a later run's time of the
// choice's tile (here a candidate's) replaces an earlier one, and a choice
// whose tile no run timed is listed as untimed, not counted.
func TestZooRivals(t *testing.T) {
	dir := fixtureCopy(t, "e2e.json", "commit", "kernels.json")
	specs, err := gen.LoadAll(fixtureRoot)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(specs, func(l gen.Loaded) bool { return l.Spec().Name == "rp_z" })
	chosen := map[string]string{}
	for _, target := range []string{"sm80", "sm90"} {
		chosen[target] = spec.FlatV1(planFor(specs[i], target).Tile.Family())
	}
	item := func(name, path, target, tile, disposition string, relL2, ms float64) string {
		return fmt.Sprintf(`{"spec": %q, "spec_path": %q, "backend": "cuda", "target": %q, "tile": %q, "disposition": %q, "rel_l2": %g,
			"time_ms": {"mean": %g, "median": %g, "runs": 100}, "flops": 1, "min_bytes": 1, "grid": [1, 1, 1], "threads": 128}`,
			name, path, target, tile, disposition, relL2, ms, ms)
	}
	own := func(target string, ms float64) string {
		return item("rp_z", "specs/zoo/rp_z.yaml", target, chosen[target], "passed", 1e-7, ms)
	}
	cand := func(label, target, tile, disposition string, relL2, ms float64) string {
		return item("rp_z_"+target+"_"+label, "build/tune/specs/rp_z_"+target+"_"+label+".yaml", target, tile, disposition, relL2, ms)
	}
	run := func(file, date string, items ...string) {
		writeFileT(t, filepath.Join(dir, file), []byte(`{"gpu": "Fixture GPU X100", "date": "`+date+`", "timed": true, "items": [`+
			strings.Join(items, ",\n")+`]}`))
	}
	other := "{bm: 64, bn: 64, bk: 8, tm: 4, tn: 4, min_blocks: 1}"
	run("tune-kernels-zoo.json", "2030-01-04T00:00:00Z",
		// sm80: the choice 1.0 ms, its fastest passing rival 0.9: within.
		own("sm80", 1.0),
		cand("t3", "sm80", other, "passed", 1e-7, 0.9),
		cand("t4", "sm80", other, "incorrect", 1e-3, 0.1),
		// sm90: the choice 1.0 ms, a rival 0.7, one faster but over the
		// error bound, one slower.
		own("sm90", 1.0),
		cand("t3", "sm90", other, "passed", 1e-7, 0.7),
		cand("t5", "sm90", other, "passed", 8e-6, 0.5),
		cand("t7", "sm90", other, "passed", 1e-7, 1.5))
	// A later run times sm90's choice again as a candidate of its tile:
	// 0.8 ms against 0.7 is within.
	run("tune-kernels-zoo-later.json", "2030-01-05T00:00:00Z",
		cand("t9", "sm90", chosen["sm90"], "passed", 1e-7, 0.8))
	r, err := Build(fixtureRoot, dir)
	if err != nil {
		t.Fatal(err)
	}
	runs := "Fixture GPU X100, 2030-01-04T00:00:00Z and 2030-01-05T00:00:00Z"
	want := []ZooRivals{
		{Target: "sm80", Run: runs, Shapes: 1, Within: 1, Worst: "rp_z 1.11x (rp_z_sm80_t3)"},
		{Target: "sm90", Run: runs, Shapes: 1, Within: 1, Worst: "rp_z 1.14x (rp_z_sm90_t3)"},
	}
	if !reflect.DeepEqual(r.Zoo.Rivals, want) {
		t.Errorf("rivals %+v, want %+v", r.Zoo.Rivals, want)
	}
	if md := Markdown(r); !strings.Contains(md, "- sm90 CUDA choices against the candidates timed beside them (kernel-only, "+runs+"; `make tune UNDER=specs/zoo/ TOP=n`): within 1.25x of the fastest on **1 of 1** shapes; furthest: rp_z 1.14x (rp_z_sm90_t3).\n") {
		t.Error("REPORT.md lacks the sm90 rivals line")
	}
	// Only a rival of another tile timed: the choice is untimed.
	run("tune-kernels-zoo.json", "2030-01-04T00:00:00Z", cand("t3", "sm80", other, "passed", 1e-7, 0.9))
	run("tune-kernels-zoo-later.json", "2030-01-05T00:00:00Z")
	if r, err = Build(fixtureRoot, dir); err != nil {
		t.Fatal(err)
	}
	want = []ZooRivals{{Target: "sm80", Run: "Fixture GPU X100, 2030-01-04T00:00:00Z", Untimed: []string{"rp_z"}}}
	if !reflect.DeepEqual(r.Zoo.Rivals, want) {
		t.Errorf("rivals %+v, want %+v", r.Zoo.Rivals, want)
	}
	if md := Markdown(r); !strings.Contains(md, "on **0 of 0** shapes; furthest: none; today's choice never timed: rp_z.\n") {
		t.Error("REPORT.md lacks the untimed choice")
	}
	// The choice timed alone: nothing to compare it with, not counted.
	run("tune-kernels-zoo.json", "2030-01-04T00:00:00Z", own("sm80", 1.0))
	if r, err = Build(fixtureRoot, dir); err != nil {
		t.Fatal(err)
	}
	if len(r.Zoo.Rivals) != 0 {
		t.Errorf("rivals %+v, want none", r.Zoo.Rivals)
	}
}
