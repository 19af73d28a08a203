package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// tritonSpec is a spec in the random specs' reference format with the
// given geometry, rendered for the triton backend.
func tritonSpec(t *testing.T, c geom.Conv, precision string) *plan.Plan {
	t.Helper()
	yaml := spec.Generic("triton_case", "triton case", c, "rand", spec.Kernel{Backends: []string{"triton"}, Triton: spec.Triton{Precision: precision}})
	// The view's own defaults: planned without the chooser.
	s, err := spec.Parse("specs/triton_case.yaml", []byte(yaml))
	if err != nil {
		t.Fatalf("spec: %v", err)
	}
	p, err := plan.New(s, plan.Targets[0])
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	return p
}

// l1_72 and l1_77 are KernelBench level-1 geometries: grouped with
// asymmetric padding, and stride 2 with dilation 2 (half the phases have
// no tap at all).
var (
	l1_72 = geom.Conv{Batch: 8, InChannels: 32, OutChannels: 32, In: [3]int{12, 24, 48}, Kernel: [3]int{3, 5, 7},
		Stride: [3]int{2, 2, 2}, Padding: [3]int{1, 2, 3}, OutputPadding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 4}
	l1_77 = geom.Conv{Batch: 16, InChannels: 32, OutChannels: 64, In: [3]int{16, 32, 32}, Kernel: [3]int{3, 3, 3},
		Stride: [3]int{2, 2, 2}, Padding: [3]int{1, 1, 1}, Dilation: [3]int{2, 2, 2}, Groups: 1}
)

func TestTritonBlockSizes(t *testing.T) {
	for _, c := range []struct{ ch, n, k int }{
		// Channels per group -> BLOCK_N (as Cout/g), BLOCK_K (as Cin/g).
		{1, 16, 16}, {8, 16, 16}, {16, 16, 16}, {17, 32, 32}, {24, 32, 32}, {32, 32, 32},
		{40, 64, 16}, {48, 64, 16}, {56, 64, 32}, {64, 64, 32}, {100, 64, 16}, {1000, 64, 16},
	} {
		if got := tritonBlockN(c.ch); got != c.n {
			t.Errorf("tritonBlockN(%d) = %d, want %d", c.ch, got, c.n)
		}
		if got := tritonBlockK(c.ch); got != c.k {
			t.Errorf("tritonBlockK(%d) = %d, want %d", c.ch, got, c.k)
		}
	}

	v := newTritonView(tritonSpec(t, l1_72, "fp32"))
	if v.BlockM != 128 || v.BlockN != 16 || v.BlockK != 16 || v.NTiles != 1 || v.CIChunks != 1 {
		t.Errorf("l1_72 tiling = M %d N %d K %d, %d N tiles, %d chunks; want 128 16 16, 1, 1",
			v.BlockM, v.BlockN, v.BlockK, v.NTiles, v.CIChunks)
	}
	if v.NumWarps != 4 || v.NumStages != 3 || v.Int64 {
		t.Errorf("l1_72: %d warps, %d stages, int64 %v; want 4, 3, false", v.NumWarps, v.NumStages, v.Int64)
	}

	// A tiny problem gets a smaller BLOCK_M, never below 32; wide channel
	// counts take several N tiles and K chunks.
	tiny := geom.Conv{Batch: 1, InChannels: 96, OutChannels: 200, In: [3]int{2, 2, 3}, Kernel: [3]int{1, 1, 1},
		Stride: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 2}
	v = newTritonView(tritonSpec(t, tiny, "fp32"))
	if v.BlockM != 32 || v.BlockN != 64 || v.NTiles != 2 || v.BlockK != 16 || v.CIChunks != 3 {
		t.Errorf("tiny: BLOCK_M %d BLOCK_N %d (%d tiles) BLOCK_K %d (%d chunks); want 32, 64 (2), 16 (3)",
			v.BlockM, v.BlockN, v.NTiles, v.BlockK, v.CIChunks)
	}
	if v.Programs != 1*1*2*2 || v.MTiles != 1 || v.NumPhases != 1 {
		t.Errorf("tiny: %d programs (%d phases, %d M tiles), want phases*M tiles*N tiles*groups = 4", v.Programs, v.NumPhases, v.MTiles)
	}

	// The spec's Triton choices replace the defaults, precision included.
	p := tritonSpec(t, l1_72, "fp32")
	p.Spec.Kernel.Triton = spec.Triton{Precision: "3xtf32", BlockM: 64, BlockN: 32, BlockK: 64, Warps: 8, Stages: 4, ChannelsLast: true}
	v = newTritonView(p)
	if v.BlockM != 64 || v.BlockN != 32 || v.BlockK != 64 || v.NumWarps != 8 || v.NumStages != 4 || !v.ChannelsLast ||
		v.InputPrecision != "tf32x3" || !v.SliceSum {
		t.Errorf("l1_72 with Triton choices: %+v", v)
	}
	if v.MTiles != divUp(8*12*24*48, 64) || v.Programs != 8*v.MTiles*1*4 {
		t.Errorf("l1_72: %d M tiles, %d programs", v.MTiles, v.Programs)
	}

	// 2^31 elements in the output: 64-bit offsets.
	big := geom.Conv{Batch: 16, InChannels: 8, OutChannels: 64, In: [3]int{64, 64, 64}, Kernel: [3]int{3, 3, 3},
		Stride: [3]int{2, 2, 2}, Padding: [3]int{1, 1, 1}, OutputPadding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1}
	if !newTritonView(tritonSpec(t, big, "fp32")).Int64 {
		t.Errorf("big (output %d elements): Int64 not set", big.OutputLen())
	}
}

// TestTritonPhasesMatchPlan checks the per-phase constants against the plan
// and, independently, against the definition: every tap with
// (r + padding - k*dilation) divisible by the stride, and no other.
func TestTritonPhasesMatchPlan(t *testing.T) {
	plans := []*plan.Plan{tritonSpec(t, l1_72, "fp32"), tritonSpec(t, l1_77, "3xtf32")}
	random, err := Random(300, 11)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range random {
		plans = append(plans, l.Plans...)
	}
	for _, p := range plans {
		if p.Tile.TW() > 0 || p.Tile.KWInN() {
			// A W-window or W-taps-as-columns CUDA plan leaves W unsplit:
			// compare with the phases of the same spec's row-per-thread
			// direct kernel, or wgmma tile without kw_in_n.
			s := *p.Spec
			s.Kernel.CUDA = spec.CUDA{Family: spec.Direct{}}
			if p.Tile.KWInN() {
				s.Kernel.CUDA = spec.CUDA{Family: spec.WGMMA{}}
			}
			var err error
			if p, err = plan.New(&s, plan.SM90); err != nil {
				t.Fatal(err)
			}
		}
		v := newTritonView(p)
		c := p.Conv
		perProgramW := 1 // W residues per program
		if v.FuseW {
			perProgramW = v.WStep / v.WFold
		}
		if v.NumPhases*perProgramW != c.Stride[0]*c.Stride[1]*c.Stride[2] || len(v.Phases) != c.Stride[0]*c.Stride[1]*c.Stride[2] {
			t.Fatalf("%s: %d phases of %d W outputs per row (%d listed) for stride %v", p.Spec.Name, v.NumPhases, v.WStep, len(v.Phases), c.Stride)
		}
		planned := map[[3]int]plan.Phase{}
		for _, ph := range p.Phases {
			planned[ph.R] = ph
		}
		outputs, maxM := 0, 0
		for _, tp := range v.Phases {
			name := fmt.Sprintf("%s phase %v", p.Spec.Name, tp.R)
			ph, ok := planned[tp.R]
			if !ok {
				// The plan leaves out phases with no outputs; the kernel
				// visits them and must find them empty.
				if tp.M != 0 {
					t.Errorf("%s: %d rows, but the plan has no such phase", name, tp.M)
				}
				continue
			}
			if tp.Q != ph.Q || tp.M != ph.M || tp.Taps != ph.TapCount {
				t.Errorf("%s: Q %v M %d taps %d; plan Q %v M %d taps %d", name, tp.Q, tp.M, tp.Taps, ph.Q, ph.M, ph.TapCount)
			}
			if tp.Count[0]*tp.Count[1]*tp.Count[2] != tp.Taps {
				t.Errorf("%s: counts %v do not multiply to %d taps", name, tp.Count, tp.Taps)
			}
			got := expandTaps(tp, v, c.Kernel)
			if !sameTaps(got, p.Taps[ph.TapStart:ph.TapStart+ph.TapCount]) {
				t.Errorf("%s: progressions give %v, plan has %v", name, got, p.Taps[ph.TapStart:ph.TapStart+ph.TapCount])
			}
			if want := definitionTaps(c, ph.R); !sameTaps(got, want) {
				t.Errorf("%s: progressions give %v, the definition %v", name, got, want)
			}
			outputs += tp.M
			maxM = max(maxM, tp.M)
		}
		if o := p.Out; outputs != c.Batch*o[0]*o[1]*o[2] {
			t.Errorf("%s: phases cover %d output positions, want %d", p.Spec.Name, outputs, c.Batch*o[0]*o[1]*o[2])
		}
		if v.FuseW {
			maxM = c.Batch * divUp(p.Out[2], v.WStep) * divUp(p.Out[0], c.Stride[0]) * divUp(p.Out[1], c.Stride[1])
		}
		if v.MTiles != divUp(maxM, v.BlockM) || v.Programs != v.NumPhases*v.MTiles*v.NTiles*c.Groups {
			t.Errorf("%s: %d M tiles for %d rows at most, %d programs", p.Spec.Name, v.MTiles, maxM, v.Programs)
		}
	}

	// Known values: l1_72 (stride 2, dilation 1) steps the kernel index by
	// 2 and the offset by 1; l1_77 (stride 2, dilation 2) by 1 and 1, and
	// its even residues have no tap.
	// Every tap reaches exactly one residue per dimension, so l1_72's eight
	// phases share its 105 taps, the heaviest (two residues with 3 and 4
	// even-or-odd kernel indices) having 2*3*4 = 24.
	v := newTritonView(plans[0])
	taps, most := 0, 0
	for _, tp := range v.Phases {
		taps += tp.Taps
		most = max(most, tp.Taps)
	}
	if v.KStep != [3]int{2, 2, 2} || v.OffStep != [3]int{1, 1, 1} || taps != 105 || most != 24 {
		t.Errorf("l1_72: K step %v, offset step %v, %d taps, at most %d per phase; want [2 2 2], [1 1 1], 105, 24",
			v.KStep, v.OffStep, taps, most)
	}
	v = newTritonView(plans[1])
	empty := 0
	for _, tp := range v.Phases {
		if tp.Taps == 0 {
			empty++
			if tp.Count[0] != 0 && tp.Count[1] != 0 && tp.Count[2] != 0 {
				t.Errorf("l1_77 phase %v: no taps but counts %v", tp.R, tp.Count)
			}
		}
	}
	if v.KStep != [3]int{1, 1, 1} || v.OffStep != [3]int{1, 1, 1} || empty != 7 {
		t.Errorf("l1_77: K step %v, offset step %v, %d phases without taps; want [1 1 1], [1 1 1], 7", v.KStep, v.OffStep, empty)
	}
}

// definitionTaps lists, by brute force, the taps that reach residue r.
func definitionTaps(c geom.Conv, r [3]int) []plan.Tap {
	var taps []plan.Tap
	for kd := 0; kd < c.Kernel[0]; kd++ {
		for kh := 0; kh < c.Kernel[1]; kh++ {
			for kw := 0; kw < c.Kernel[2]; kw++ {
				k := [3]int{kd, kh, kw}
				tap := plan.Tap{K: k, Flat: (kd*c.Kernel[1]+kh)*c.Kernel[2] + kw}
				ok := true
				for i := range 3 {
					num := r[i] + c.Padding[i] - k[i]*c.Dilation[i]
					if ((num%c.Stride[i])+c.Stride[i])%c.Stride[i] != 0 {
						ok = false
						break
					}
					tap.Off[i] = num / c.Stride[i]
				}
				if ok {
					taps = append(taps, tap)
				}
			}
		}
	}
	return taps
}

func TestTritonRender(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	forbidden := regexp.MustCompile(`torch\.compile|torch\.jit|allow_tf32|cudnn|CUDAGraph|cuda\.graph|Stream|` +
		`\.half\(|float16|bfloat16|\btry:|\bexcept\b|^\s*pass\s*$|F\.conv|conv_transpose3d\(|\.forward\(|` +
		`get_inputs|get_init_inputs|print\(|logging|input_precision="tf32"`)
	for _, c := range []struct {
		conv      geom.Conv
		precision string
		want      string
	}{
		{l1_72, "fp32", `input_precision="ieee"`},
		{l1_77, "3xtf32", `input_precision="tf32x3"`},
		{geom.Conv{Batch: 2, InChannels: 6, OutChannels: 9, In: [3]int{3, 4, 5}, Kernel: [3]int{2, 3, 1},
			Stride: [3]int{3, 1, 2}, Padding: [3]int{1, 0, 0}, Dilation: [3]int{2, 1, 3}, Groups: 3, Bias: true}, "fp32", `input_precision="ieee"`},
	} {
		p := tritonSpec(t, c.conv, c.precision)
		src := renderTritonCase(t, r, p)
		if first := strings.SplitN(src, "\n", 2)[0]; first != "# Code generated by convtgen from specs/triton_case.yaml. DO NOT EDIT." {
			t.Errorf("first line %q", first)
		}
		if n := strings.Count(src, c.want); n != 1 {
			t.Errorf("%s: %d times %s, want once", c.precision, n, c.want)
		}
		if !strings.Contains(src, "input_precision=") || strings.Contains(src, `input_precision="tf32"`) {
			t.Errorf("%s: plain TF32 or no input_precision in the kernel", c.precision)
		}
		for i, line := range strings.Split(src, "\n") {
			if m := forbidden.FindString(line); m != "" {
				t.Errorf("%s: line %d has forbidden %q: %s", c.precision, i+1, m, line)
			}
		}
		for _, want := range []string{
			"@triton.jit", "class Model(nn.Module):", "nn.ConvTranspose3d(" + strings.Join(p.Spec.Reference.Conv, ", ") + ")",
			"INT64_OFFSETS=False", "PROGRAMS = ",
		} {
			if !strings.Contains(src, want) {
				t.Errorf("%s: missing %q", c.precision, want)
			}
		}
		if got := strings.Count(src, "#   r = ("); got != c.conv.Stride[0]*c.conv.Stride[1]*c.conv.Stride[2] {
			t.Errorf("%d phase entries, want %d", got, c.conv.Stride[0]*c.conv.Stride[1]*c.conv.Stride[2])
		}
		if hasBias := strings.Contains(src, "b_ptr"); hasBias != c.conv.Bias {
			t.Errorf("bias %v but b_ptr in the kernel: %v", c.conv.Bias, hasBias)
		}
	}
}

// renderTritonCase is the Triton submission of a tritonSpec plan.
func renderTritonCase(t *testing.T, r *Renderer, p *plan.Plan) string {
	t.Helper()
	files, err := r.Render([]*plan.Plan{p}, "specs/triton_case.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path == "triton_case/"+SubmissionFile("triton", p.Target) {
			return string(f.Data)
		}
	}
	t.Fatalf("no triton submission among %d files", len(files))
	return ""
}

// expandTaps lists the taps the kernel visits for a phase, in its loop
// order (depth slowest, width fastest).
func expandTaps(tp TritonPhase, v *TritonView, kernel [3]int) []plan.Tap {
	var taps []plan.Tap
	for a := 0; a < tp.Count[0]; a++ {
		for b := 0; b < tp.Count[1]; b++ {
			for e := 0; e < tp.Count[2]; e++ {
				var t plan.Tap
				for i, j := range [3]int{a, b, e} {
					t.K[i] = tp.K0[i] + j*v.KStep[i]
					t.Off[i] = tp.Off0[i] - j*v.OffStep[i]
				}
				t.Flat = (t.K[0]*kernel[1]+t.K[1])*kernel[2] + t.K[2]
				taps = append(taps, t)
			}
		}
	}
	return taps
}

func sameTaps(a, b []plan.Tap) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestFusedWAndPads holds the fused-W column arithmetic and the input
// border against the definition, on random configurations with both
// options on (some folding outputs): along W, every (output, tap) pair is
// served by exactly one (shift, column) of a fused program and no column
// takes a tap that does not exist; the border is exactly as wide as the
// reads of every phase (computed for any stride, though applied only at
// stride 1).
func TestFusedWAndPads(t *testing.T) {
	random, err := Random(300, 12)
	if err != nil {
		t.Fatal(err)
	}
	fused, padded := 0, 0
	for _, l := range random {
		s := *l.Spec()
		s.Kernel.Backends = []string{"triton"}
		s.Kernel.Triton.FuseW, s.Kernel.Triton.PadInput = true, true
		p, err := plan.New(&s, plan.SM90)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		v := newTritonView(p)
		c := p.Conv
		k, st, pad, dil := c.Kernel[2], c.Stride[2], c.Padding[2], c.Dilation[2]
		fold := max(1, s.Kernel.Triton.FoldW)
		if v.FuseW != (st*fold > 1) || v.FuseW && (v.WStep != st*fold || v.WPhases*v.WGcd != v.WStep) {
			t.Fatalf("%s: fused %v (%d W phases, %d outputs per row) at stride_w %d, fold %d", s.Name, v.FuseW, v.WPhases, v.WStep, st, fold)
		}
		if v.FuseW {
			fused++
			// The columns, and after each the WGcd-1 residues it writes
			// the bias into: every residue of a row exactly once.
			written := make([]int, v.WStep)
			for j := range v.WPhases {
				for i := range v.WGcd {
					written[(v.WR0+v.WGcd*j+i)%v.WStep]++
				}
			}
			for rw, n := range written {
				if n != 1 {
					t.Fatalf("%s: residue %d of %d written %d times (columns %d + %d*j)", s.Name, rw, v.WStep, n, v.WR0, v.WGcd)
				}
			}
			// The kernel's column arithmetic, shift by shift: every tap
			// of every residue must be served by a column.
			served := map[[2]int]int{} // (residue, kw) -> times a column takes it
			for u := range v.WShifts {
				off := v.WOffMax - u
				for j := range v.WPhases {
					rw := v.WR0 + v.WGcd*j
					kwDil := rw + pad - off*st
					if kwDil >= 0 && kwDil%dil == 0 && kwDil/dil < k {
						served[[2]int{rw, kwDil / dil}]++
					}
				}
			}
			want := 0
			for rw := range st * fold {
				for kw := range k {
					if n := rw + pad - kw*dil; n%st == 0 {
						want++
						if served[[2]int{rw, kw}] != 1 {
							t.Errorf("%s: residue %d tap %d served %d times", s.Name, rw, kw, served[[2]int{rw, kw}])
						}
					}
				}
			}
			if len(served) != want || v.WUsed != want || want != k*fold {
				t.Errorf("%s: %d pairs served, %d taps by definition, WUsed %d, kernel %d", s.Name, len(served), want, v.WUsed, k)
			}
		}
		// The border is made only at stride 1, where whole channel chunks
		// (or the flat reduction) allow loads without bounds masks.
		if want := (p.CinG%v.BlockK == 0 || v.FlatK) && c.Stride == [3]int{1, 1, 1}; v.PadInput != want {
			t.Errorf("%s: padded input %v with %d channels per group, block_k %d, stride %v", s.Name, v.PadInput, p.CinG, v.BlockK, c.Stride)
		}
		// The border holds every read, by the definition's taps, of every
		// phase with rows, and no more: the extreme reads touch its edges.
		lo, hi := inputPads(v.Phases, v.OffStep, c.In)
		for i := range 3 {
			minRead, maxRead := 0, c.In[i]-1
			for _, tp := range v.Phases {
				if tp.M == 0 {
					continue
				}
				for _, tap := range definitionTaps(c, tp.R) {
					minRead = min(minRead, tap.Off[i])
					maxRead = max(maxRead, tp.Q[i]-1+tap.Off[i])
				}
			}
			if lo[i] != -minRead || hi[i] != maxRead-(c.In[i]-1) {
				t.Errorf("%s: dimension %d border %d/%d, reads span %d..%d of %d", s.Name, i, lo[i], hi[i], minRead, maxRead, c.In[i])
			}
		}
		if lo != [3]int{} || hi != [3]int{} {
			padded++
		}
	}
	if fused < 50 || padded < 30 {
		t.Errorf("only %d of 300 random configurations have stride_w > 1, %d need a border", fused, padded)
	}
}

// TestTritonOptionsRender renders every combination of the Triton options
// on a strided and a stride-1 problem: each option shows in the kernel's
// constants and code exactly where the view applies it (fuse_w only with
// stride_w > 1, pad_input only at stride 1, split_weight in 3xtf32), and
// every file is valid Python.
func TestTritonOptionsRender(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	strided := geom.Conv{Batch: 2, InChannels: 32, OutChannels: 16, In: [3]int{4, 5, 6}, Kernel: [3]int{3, 3, 3},
		Stride: [3]int{2, 2, 2}, Padding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true}
	unit := strided
	unit.Stride, unit.Padding = [3]int{1, 1, 1}, [3]int{0, 0, 0}
	dir := t.TempDir()
	var files []string
	for ci, c := range []geom.Conv{strided, unit} {
		for combo := range 16 {
			fuse, pad, split, flat := combo&1 != 0, combo&2 != 0, combo&4 != 0, combo&8 != 0
			k := spec.Kernel{Backends: []string{"triton"}, Triton: spec.Triton{Precision: "3xtf32", ChannelsLast: true, BlockK: 32, FuseW: fuse, PadInput: pad, SplitWeight: split, FlatK: flat}}
			ps, errs := parseAndPlan("specs/triton_case.yaml", []byte(spec.Generic("triton_case", "triton case", c, "rand", k)))
			if errs != nil {
				t.Fatalf("spec: %v", errs)
			}
			out, err := r.Render(ps[:1], "specs/triton_case.yaml")
			if err != nil {
				t.Fatal(err)
			}
			var src string
			for _, f := range out {
				if f.Path == "triton_case/"+SubmissionFile("triton", ps[0].Target) {
					src = string(f.Data)
				}
			}
			name := fmt.Sprintf("stride %v fuse %v pad %v split %v flat %v", c.Stride, fuse, pad, split, flat)
			wantFuse, wantPad := fuse && c.Stride[2] > 1, pad && c.Stride == [3]int{1, 1, 1}
			for _, want := range []string{
				fmt.Sprintf("FUSE_W=%s,", pyBool(wantFuse)),
				fmt.Sprintf("PAD_INPUT=%s,", pyBool(wantPad)),
			} {
				if !strings.Contains(src, want) {
					t.Errorf("%s: no %q", name, want)
				}
			}
			if got := strings.Contains(src, "channels last, inside a zero border."); got != wantPad {
				t.Errorf("%s: padded copy %v, want %v", name, got, wantPad)
			}
			if got, want := strings.Contains(src, "k_total = "), flat && !wantFuse; got != want {
				t.Errorf("%s: flat reduction %v, want %v", name, got, want)
			}
			tf32, tf32x3 := strings.Count(src, `input_precision="tf32")`), strings.Count(src, `input_precision="tf32x3")`)
			if split && (tf32 != 3 || tf32x3 != 0 || !strings.Contains(src, "w_lo_ptr")) ||
				!split && (tf32 != 0 || tf32x3 != 1 || strings.Contains(src, "w_lo_ptr")) {
				t.Errorf("%s: %d tf32 and %d tf32x3 dots", name, tf32, tf32x3)
			}
			path := filepath.Join(dir, fmt.Sprintf("case_%d_%d.py", ci, combo))
			if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			files = append(files, path)
		}
	}
	pyCompile(t, files)
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// TestTritonPhaseRows holds the kernel's phase table against the phases
// it stands for: one row per program phase, W fastest; unfused, each row
// is its stride phase's residue, extents and taps; fused, a (D, H) row's
// W entries span every W shift, its extent the rows' W grid. The table is
// loaded (of the index width) exactly when there is more than one phase.
func TestTritonPhaseRows(t *testing.T) {
	random, err := Random(300, 13)
	if err != nil {
		t.Fatal(err)
	}
	plans := []*plan.Plan{tritonSpec(t, l1_72, "fp32"), tritonSpec(t, l1_77, "3xtf32")}
	for _, l := range random {
		plans = append(plans, l.Plans...)
	}
	fused := 0
	for _, p := range plans {
		v := newTritonView(p)
		c := p.Conv
		if len(v.Rows) != v.NumPhases || v.PhaseTable != (v.NumPhases > 1) || v.PhaseFields != TritonPhaseFields {
			t.Fatalf("%s: %d rows of %d phases, table %v, %d fields", p.Spec.Name, len(v.Rows), v.NumPhases, v.PhaseTable, v.PhaseFields)
		}
		if want := map[bool]string{false: "int32", true: "int64"}[v.Int64]; v.PhaseDType != want {
			t.Errorf("%s: table of %s, Int64 %v", p.Spec.Name, v.PhaseDType, v.Int64)
		}
		perRow := c.Stride[2] / (c.Stride[0] * c.Stride[1] * c.Stride[2] / v.NumPhases) // 1 fused, else stride_w
		for i, row := range v.Rows {
			name := fmt.Sprintf("%s row %d", p.Spec.Name, i)
			if n := len(strings.Split(row.Tuple(), ", ")); n != TritonPhaseFields {
				t.Fatalf("%s: %d entries, want %d", name, n, TritonPhaseFields)
			}
			// The stride phase of the row's first W residue (phases list W fastest).
			tp := v.Phases[(i/perRow)*c.Stride[2]+i%perRow]
			if row.R != tp.R {
				t.Fatalf("%s: residue %v, phase %v", name, row.R, tp.R)
			}
			dims := 3
			if v.FuseW {
				dims = 2
				if row.Q[2] != divUp(p.Out[2], v.WStep) || row.K0[2] != 0 || row.Taps[2] != v.WShifts || row.Off0[2] != v.WOffMax {
					t.Errorf("%s: W entries Q %d k0 %d taps %d off0 %d; want %d, 0, %d, %d", name, row.Q[2], row.K0[2],
						row.Taps[2], row.Off0[2], divUp(p.Out[2], v.WStep), v.WShifts, v.WOffMax)
				}
			}
			for d := range dims {
				if row.Q[d] != tp.Q[d] || row.K0[d] != tp.K0[d] || row.Taps[d] != tp.Count[d] || row.Off0[d] != tp.Off0[d] {
					t.Errorf("%s dim %d: Q %d k0 %d taps %d off0 %d; phase %d %d %d %d", name, d, row.Q[d], row.K0[d],
						row.Taps[d], row.Off0[d], tp.Q[d], tp.K0[d], tp.Count[d], tp.Off0[d])
				}
			}
		}
		if v.FuseW {
			fused++
		}
	}
	if fused == 0 || fused == len(plans) {
		t.Errorf("%d of %d plans fused: want both kinds", fused, len(plans))
	}
}

// TestTritonPhaseNotFromProgramID: in a kernel of several phases nothing
// is computed from the phase index but the table row's address, and every
// per-phase number is a load from it (values the compiler derived from the
// program id, it narrowed to 8 bits, which Triton 3.6 then miscompiled
// under pipelined loads); with one phase there is no table at all.
func TestTritonPhaseNotFromProgramID(t *testing.T) {
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	one := l1_72
	one.Stride, one.OutputPadding = [3]int{1, 1, 1}, [3]int{}
	usesPhase := regexp.MustCompile(`\bphase\b`)
	load := regexp.MustCompile(`^\s+(\w+), (\w+), (\w+) = tl\.load\(row \+ (\d+)\), tl\.load\(row \+ (\d+)\), tl\.load\(row \+ (\d+)\)`)
	for _, c := range []geom.Conv{l1_72, l1_77, one} {
		p := tritonSpec(t, c, "3xtf32")
		v := newTritonView(p)
		src := renderTritonCase(t, r, p)
		kernel := src[strings.Index(src, "def "+v.Kernel+"("):strings.Index(src, "def "+v.Wrapper+"(")]
		var uses []string
		loaded := map[string]int{}
		for _, line := range strings.Split(kernel, "\n") {
			code, _, _ := strings.Cut(line, "#")
			if code = strings.TrimSpace(code); usesPhase.MatchString(code) {
				uses = append(uses, code)
			}
			if m := load.FindStringSubmatch(line); m != nil {
				for i := 1; i <= 3; i++ {
					loaded[m[i]] = atoi(t, m[i+3])
				}
			}
		}
		if !v.PhaseTable {
			if strings.Contains(src, "PHASE_TABLE") || strings.Contains(src, "phases_ptr") || len(loaded) != 0 {
				t.Errorf("stride %v: one phase, but a phase table", c.Stride)
			}
			continue
		}
		if want := []string{"phase = pid % NUM_PHASES", "row = phases_ptr + phase * PHASE_FIELDS"}; strings.Join(uses, "\n") != strings.Join(want, "\n") {
			t.Errorf("stride %v: the phase index used in\n%s\nwant only\n%s", c.Stride, strings.Join(uses, "\n"), strings.Join(want, "\n"))
		}
		names := []string{"r_d", "r_h", "r_w", "q_d", "q_h", "q_w", "k0_d", "k0_h", "k0_w", "taps_d", "taps_h", "taps_w", "off0_d", "off0_h", "off0_w"}
		for i, n := range names {
			if col, ok := loaded[n]; !ok || col != i {
				t.Errorf("stride %v: %s loaded from column %d (found %v), want %d", c.Stride, n, col, ok, i)
			}
		}
		if got := strings.Count(src[strings.Index(src, "PHASE_TABLE = ("):], "\n    ("); got != v.NumPhases {
			t.Errorf("stride %v: %d table rows, want %d", c.Stride, got, v.NumPhases)
		}
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatal(err)
	}
	return n
}
