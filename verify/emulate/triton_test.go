package emulate_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// tritonCases are small configurations for the Triton emulation: random
// ones (any stride, padding, output_padding, dilation, groups, bias),
// three at stride 1 with whole 16-channel chunks, where pad_input applies
// (the last with taps reading before and after each output along W), and
// two whose W stride and dilation share a factor, so that fused programs
// write residues that no tap reaches (the first with residue 0 dead, the
// second with two live residues of four).
func tritonCases(t *testing.T, n int, seed int64) []*spec.Spec {
	t.Helper()
	all, err := gen.Random(40*n, seed)
	if err != nil {
		t.Fatal(err)
	}
	var out []*spec.Spec
	for _, l := range all {
		c := l.Plans[0].Conv
		if c.OutputLen() <= 2000 && c.InputLen() <= 2000 && c.Taps() <= 27 && len(out) < n {
			out = append(out, l.Spec())
		}
	}
	for i, c := range []geom.Conv{
		{Batch: 1, InChannels: 16, OutChannels: 5, In: [3]int{3, 4, 5}, Kernel: [3]int{2, 3, 2}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{0, 1, 1}, Dilation: [3]int{1, 2, 1}, Groups: 1, Bias: true},
		{Batch: 2, InChannels: 32, OutChannels: 6, In: [3]int{2, 3, 4}, Kernel: [3]int{3, 1, 2}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{1, 0, 0}, Dilation: [3]int{2, 1, 1}, Groups: 2},
		{Batch: 1, InChannels: 16, OutChannels: 3, In: [3]int{2, 2, 5}, Kernel: [3]int{1, 2, 3}, Stride: [3]int{1, 1, 1},
			Padding: [3]int{0, 0, 0}, Dilation: [3]int{1, 1, 1}, Groups: 1},
	} {
		out = append(out, caseSpec(t, fmt.Sprintf("unit_stride_%d", i), "stride 1, whole channel chunks", c))
	}
	for i, c := range []geom.Conv{
		{Batch: 2, InChannels: 3, OutChannels: 5, In: [3]int{2, 3, 4}, Kernel: [3]int{2, 2, 3}, Stride: [3]int{2, 1, 2},
			Padding: [3]int{1, 0, 1}, Dilation: [3]int{2, 1, 2}, Groups: 1, Bias: true},
		{Batch: 1, InChannels: 4, OutChannels: 6, In: [3]int{2, 2, 3}, Kernel: [3]int{1, 2, 3}, Stride: [3]int{1, 2, 4},
			Padding: [3]int{0, 1, 2}, OutputPadding: [3]int{0, 1, 3}, Dilation: [3]int{1, 1, 2}, Groups: 2},
	} {
		out = append(out, caseSpec(t, fmt.Sprintf("shared_factor_%d", i), "W stride and dilation sharing a factor", c))
	}
	return out
}

func caseSpec(t *testing.T, name, summary string, c geom.Conv) *spec.Spec {
	t.Helper()
	yaml := spec.Generic(name, summary, c, "rand", spec.Kernel{Backends: []string{"triton"}})
	s, err := spec.Parse(name+".yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestTritonKernelsMatchReference runs emitted Triton submissions' wrappers
// and kernels on the CPU (triton_emu.py): small configurations, each with its own combination of
// channels_last, fuse_w, pad_input, split_weight, flat_k and precision at 16-wide
// blocks; every load and store in bounds, every output written, error
// against float64 at fp32 level (TF32 rounding emulated in tl.dot, so a
// wrong 3xTF32 split would show). Each option must apply somewhere.
func TestTritonKernelsMatchReference(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	n := 14
	if testing.Short() {
		n = 4
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]int{}
	for i, base := range tritonCases(t, n, 21) {
		s := *base
		cl, fuse, pad, split := i&1 != 0, i&2 != 0, i&4 != 0 || strings.HasPrefix(s.Name, "unit_stride"), i&8 != 0 || i%3 == 0
		flat := i%5 < 2 || strings.HasSuffix(s.Name, "_1")
		fold := []int{0, 2, 3}[i%3] // 3: phase columns padded to a power of two
		precision := []string{"fp32", "3xtf32"}[i%2]
		if split {
			precision = "3xtf32"
		}
		s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: spec.Triton{Precision: precision,
			BlockM: 16, BlockN: 16, BlockK: 16, Warps: 4, Stages: 2,
			ChannelsLast: cl, FuseW: fuse, PadInput: pad, SplitWeight: split, FlatK: flat}}
		if fuse || strings.HasPrefix(s.Name, "unit_stride") || strings.HasPrefix(s.Name, "shared_factor") {
			s.Kernel.Triton.FuseW, s.Kernel.Triton.FoldW = true, fold
		}
		p, err := plan.New(&s, plan.SM90)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		t.Run(s.Name, func(t *testing.T) {
			src := renderTriton(t, r, p)
			for _, flag := range tritonFlags {
				if strings.Contains(src, flag) {
					applied[flag]++
				}
			}
			c := p.Conv
			in := gpu.MakeInputs(c, p.Spec.Problem.InputDist, 7)
			y, err := runTriton(t, python, src, c, in)
			if err != nil {
				t.Fatalf("%+v (triton %s): %v", c, s.Kernel.Triton, err)
			}
			if nan := nanCount(y); nan > 0 {
				t.Fatalf("%+v (triton %s): %d of %d outputs not written", c, s.Kernel.Triton, nan, len(y))
			}
			if e := ref.RelL2(y, ref.Forward(c, in.X, in.W, in.B)); e > 1e-5 {
				t.Fatalf("%+v (triton %s): relative L2 error %.2e > 1e-5", c, s.Kernel.Triton, e)
			}
		})
	}
	for _, flag := range tritonFlags {
		if applied[flag] == 0 {
			t.Errorf("no case has %s", flag)
		}
	}
}

// runTriton runs the Triton submission src on in, its programs in its own
// seeded order.
func runTriton(t *testing.T, python, src string, c geom.Conv, in gpu.Inputs) ([]float32, error) {
	t.Helper()
	seed, err := emulate.SeedFor([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return emulate.RunTriton(context.Background(), python, []byte(src), seed, in.X, in.W, in.B, c.OutputLen())
}

// tritonFlags mark each Triton option in a rendered kernel.
var tritonFlags = []string{"CHANNELS_LAST=True", "FUSE_W=True", "W_FOLD=2,", "W_FOLD=3,", "G_W=2,", "PAD_INPUT=True", "w_lo_ptr", "k_total = "}

func renderTriton(t *testing.T, r *gen.Renderer, p *plan.Plan) string {
	t.Helper()
	files, err := r.Render([]*plan.Plan{p}, "specs/"+p.Spec.Name+".yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := gen.SubmissionFile("triton", p.Target)
	for _, f := range files {
		if strings.HasSuffix(f.Path, "/"+want) {
			return string(f.Data)
		}
	}
	t.Fatal("no " + want + " rendered")
	return ""
}

// TestTritonMutantsAreCaught plants bugs in rendered Triton kernels (a
// dropped TF32 remainder, fused columns all on one phase, bias-only W
// residues left unwritten or written past their row, a tap offset
// stepping the wrong way, the padded load one element off, an unmasked
// store, a wrong output stride, flat columns all on the first tap, and in
// the wrapper the weight re-laid the wrong way or its TF32 remainder
// dropped): each must come out wrong (an error, an
// out-of-bounds access or unwritten outputs) in the emulation, so the
// passing kernels of TestTritonKernelsMatchReference pass on merit.
func TestTritonMutantsAreCaught(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	// The cases' kernels, with the options that the mutants need.
	var srcs []string
	var convs []geom.Conv
	// Beside the shared cases, one the flat-reduction mutant always
	// applies to (every extent 3 or more, kernel past the stride, channels
	// short of a 16-wide chunk, no W fusion), as the random draws shift
	// whenever the plan refuses another tile.
	cases := append(tritonCases(t, 14, 21), caseSpec(t, "flat_k", "flat reduction over overlapping taps", geom.Conv{
		Batch: 1, InChannels: 3, OutChannels: 4, In: [3]int{3, 3, 4}, Kernel: [3]int{2, 2, 3}, Stride: [3]int{2, 1, 1},
		Padding: [3]int{0, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true}))
	for i, base := range cases {
		s := *base
		s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: spec.Triton{Precision: "3xtf32",
			BlockM: 16, BlockN: 16, BlockK: 16, ChannelsLast: i%2 == 0, FuseW: i%3 != 0 || strings.HasPrefix(s.Name, "shared_factor"),
			PadInput: true, SplitWeight: true, FlatK: true}}
		if i%3 != 0 && i%4 >= 2 {
			s.Kernel.Triton.FoldW = 2
		}
		if s.Name == "flat_k" {
			s.Kernel.Triton.FuseW, s.Kernel.Triton.FoldW = false, 0 // W fusion would replace the flat reduction
		}
		p, err := plan.New(&s, plan.SM90)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		srcs, convs = append(srcs, renderTriton(t, r, p)), append(convs, p.Conv)
	}
	always := func(geom.Conv) bool { return true }
	for _, m := range []struct {
		name, needs, old, new string
		applies               func(geom.Conv) bool // the mutated line changes something
	}{
		{"no TF32 remainder", "w_lo_ptr", "a_lo = a - a_hi", "a_lo = a * 0.0", always},
		{"fused columns on one phase", "FUSE_W=True", "G_W * (offs_n // CO_BLOCK)", "G_W * (offs_n * 0)",
			func(c geom.Conv) bool { // two W residues or more have taps
				g := c.Stride[2]
				for d := c.Dilation[2]; d != 0; g, d = d, g%d {
				}
				return c.Stride[2]/g > 1 && c.Kernel[2] > 1
			}},
		{"bias-only W residues left unwritten", "G_W=2,", "for j in tl.static_range(1, G_W):", "for j in tl.static_range(1, 1):", always},
		{"bias-only W residues past the row", "G_W=2,", "rj = (rw + j) % O_STEP_W", "rj = rw + j",
			func(c geom.Conv) bool { return c.Padding[2]%2 == 1 }}, // the last column's residue wraps
		{"tap offset the wrong way", "", "off_w = off0_w - tw * W_OFF_STEP", "off_w = off0_w + tw * W_OFF_STEP",
			func(c geom.Conv) bool { return c.Kernel[2] > 1 }},
		{"phase table's D and H offsets swapped", "PHASE_TABLE = (", "off0_d, off0_h, off0_w = tl.load(row + 12), tl.load(row + 13)",
			"off0_d, off0_h, off0_w = tl.load(row + 13), tl.load(row + 12)", always},
		{"padded load off by one", "PAD_INPUT=True", "a = tl.load(a_ptrs", "a = tl.load(1 + a_ptrs", always},
		{"unmasked store", "", "tl.store(y_ptrs, acc, mask=y_ok)", "tl.store(y_ptrs, acc)", always},
		{"folded rows read unfolded input", "W_FOLD=2,", "iw = qw * W_FOLD", "iw = qw",
			func(c geom.Conv) bool { return c.Out()[2] > 2*c.Stride[2] }}, // a row past the first
		{"output W stride", "", "+ O_STEP_W * qw\n", "+ qw\n", func(c geom.Conv) bool { return c.Stride[2] > 1 }},
		{"weight re-laid the other way", "CHANNELS_LAST=True", "            ci = e % C_IN_G\n            co = (e // C_IN_G) % C_OUT_G",
			"            co = e % C_OUT_G\n            ci = (e // C_OUT_G) % C_IN_G", always},
		{"weight's TF32 remainder dropped", "wk_lo_ptr", "v - hi, mask=e_ok", "v - v, mask=e_ok", always},
		{"input border left unwritten", "PAD_INPUT=True", "mask=xw_ok[:, None] & c_ok[None, :])", "mask=src_ok[:, None] & c_ok[None, :])", always},
		{"input rows re-laid one row off", "CHANNELS_LAST=True", "dst = (pid * X_W + xw)", "dst = ((pid + 1) % X_ROWS * X_W + xw)", always},
		{"flat columns all on the first tap", "k_total = ", "tap = kk // C_IN_G", "tap = kk * 0",
			func(c geom.Conv) bool {
				return min(c.In[0], c.In[1], c.In[2]) >= 3 && (c.Kernel[0] > c.Stride[0] || c.Kernel[1] > c.Stride[1] || c.Kernel[2] > c.Stride[2])
			}},
	} {
		t.Run(m.name, func(t *testing.T) {
			// The mutant must be caught by a case it applies to; one whose
			// mutated line happens to change nothing there (its outputs
			// all bias, say) is logged and the next case tried.
			tried := 0
			for i, src := range srcs {
				if !strings.Contains(src, m.needs) || !strings.Contains(src, m.old) || !m.applies(convs[i]) {
					continue
				}
				tried++
				c := convs[i]
				in := gpu.MakeInputs(c, "rand", 7)
				y, err := runTriton(t, python, strings.Replace(src, m.old, m.new, 1), c, in)
				switch {
				case err != nil:
					t.Logf("caught: %v", strings.SplitN(err.Error(), "\n", 2)[0])
				case nanCount(y) > 0:
					t.Logf("caught: %d outputs not written", nanCount(y))
				default:
					e := ref.RelL2(y, ref.Forward(c, in.X, in.W, in.B))
					if e <= 1e-5 {
						t.Logf("%+v: mutant passes with error %.2e here", c, e)
						continue
					}
					t.Logf("caught: relative L2 error %.2e", e)
				}
				return
			}
			if tried > 0 {
				t.Fatalf("the mutant passes on all %d cases it applies to", tried)
			}
			t.Fatalf("no case where the mutant applies")
		})
	}
}
