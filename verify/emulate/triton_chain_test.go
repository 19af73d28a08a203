package emulate_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// tritonChainPlan plans s's Triton file alone for sm90 (the Triton files
// of both targets are the same code; only a chooser's tiling differs),
// unless triton says otherwise with tiles of 32 rows by 16 channels and a
// flat reduction (16 (tap, channel) columns a step, not 16 channels of
// the few a shrunk problem has), so that the emulation stays quick.
func tritonChainPlan(t *testing.T, s *spec.Spec, triton spec.Triton) *plan.Plan {
	t.Helper()
	if triton.BlockM == 0 {
		triton.BlockM, triton.BlockN, triton.BlockK, triton.FlatK = 32, 16, 16, true
	}
	s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: triton}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return p
}

// runTritonChain renders p's Triton submission, applies edit to it (nil:
// none), runs its whole forward in the emulator on inputs shift changes
// (nil: none) and compares with the float64 reference.
func runTritonChain(t *testing.T, r *gen.Renderer, python string, p *plan.Plan, edit func(string) string, shift func(*gpu.Inputs)) chainRun {
	t.Helper()
	src := renderTriton(t, r, p)
	if edit != nil {
		src = edit(src)
	}
	ci := newChainInputs(t, p, shift)
	c := p.Conv
	xShape := []int{c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2]}
	if len(p.Epilogue.Chain.Prologue) > 0 {
		xShape = p.Spec.Reference.Inputs[0].Shape
	}
	seed, err := emulate.SeedFor([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	y, after, err := emulate.RunTritonChain(context.Background(), python, []byte(src), seed, ci.x, ci.in.W, ci.in.B, xShape, p.Epilogue.Chain, ci.extras)
	return ci.run(y, after, seed, err)
}

func python3(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	return python
}

// TestLevel2TritonForwardMatchesReference runs every level-2 problem's
// Triton file in small, its whole forward (prologue, convolution with
// the fused store, the kernels after it, BatchNorm updates) as its
// forward function launches it: every output written, each element at
// most once a launch, relative L2 within 1e-5 of the float64 reference
// on the output and on the running statistics.
func TestLevel2TritonForwardMatchesReference(t *testing.T) {
	python := python3(t)
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, path := range level2Specs(t) {
		s := shrink(t, path)
		if p, err := plan.New(s, plan.SM90); err != nil || p.TritonLeftOut != "" {
			continue // CUDA alone (gen/plan's TestLevel2TritonBackend says which)
		}
		ran++
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			p := tritonChainPlan(t, s, spec.Triton{})
			run := runTritonChain(t, r, python, p, nil, nil)
			run.check(t, p)
			name, e := run.worst()
			t.Logf("worst relative L2 error %.2e (%s)", e, name)
		})
	}
	if ran < 5 {
		t.Errorf("%d level-2 problems with a Triton file, want at least 5", ran)
	}
}

// gwFusedSpec is a problem whose W stride and dilation share a factor, so
// that fused programs store W residues no tap reaches (the bias alone),
// with ops in the store that read the convolution's value.
const gwFusedSpec = `version: 2
name: gw_fused
title: fused ops on W residues no tap reaches
problem:
  batch: 2
  in_channels: 3
  out_channels: 5
  kernel: [2, 2, 3]
  input: [2, 3, 4]
  stride: [1, 1, 2]
  padding: [0, 1, 1]
  dilation: [1, 1, 2]
  bias: true
reference:
  attr: conv_transpose
  params:
    - {name: in_channels, type: int}
    - {name: out_channels, type: int}
    - {name: kernel_size, type: tuple}
    - {name: stride, type: tuple}
    - {name: padding, type: tuple}
    - {name: dilation, type: tuple}
  conv:
    - in_channels
    - out_channels
    - kernel_size
    - stride=stride
    - padding=padding
    - dilation=dilation
  init_inputs: [3, 5, [2, 2, 3], [1, 1, 2], [0, 1, 1], [1, 1, 2]]
  forward:
    - {clamp: {min: -0.05}}
    - {mul: conv}
    - {div: 2.0}
`

// plantFused moves p's first step, a pointwise one reading tensors (a
// per-channel parameter, a second input), into the convolution's store,
// as a plan that fuses such ops would: the store's tensor operands.
func plantFused(t *testing.T, p *plan.Plan) *plan.Plan {
	t.Helper()
	ch := *p.Epilogue.Chain
	if ch.Fused {
		return p // the plan's store already applies them
	}
	if len(ch.Passes) == 0 || ch.Passes[0].Kind != "pointwise" || ch.Fused {
		t.Fatalf("%s: no unfused leading pointwise step", p.Spec.Name)
	}
	q := *p
	q.Epilogue.Ops = ch.Passes[0].Ops
	ch.Passes, ch.Fused = ch.Passes[1:], true
	q.Epilogue.Chain = &ch
	return &q
}

// tritonForm is one level-2 Triton forward in a form the 19 shrunk
// problems with the default options do not reach.
type tritonForm struct {
	name   string
	plan   func(t *testing.T) *plan.Plan
	marker string // in the rendered file: the form is there
}

func tritonForms() []tritonForm {
	level2 := func(name string) string { return filepath.Join("..", "..", "specs", "level2", name+".yaml") }
	// pinned: a problem in one of chain_test.go's geometries, where its
	// norms take a stats step and a normalise step (partial results).
	pinned := func(name string, g *pin) func(t *testing.T) *plan.Plan {
		return func(t *testing.T) *plan.Plan {
			return tritonChainPlan(t, shrinkInputs(t, level2(name), g.init, g.problem, g.inputs), spec.Triton{})
		}
	}
	return []tritonForm{
		{"group norm from partial results, weight and bias per channel", pinned("61_relu_groupnorm", &groups5488),
			"+ 2 * q + 1, mask=ok, other=0.0)).to(tl.float32) * tl.load(e0_ptr + c, mask=ok, other=0.0)"},
		{"softmax over positions in pieces", pinned("38_avgpool_clamp_softmax_multiply", &softmax65536), "piece = pid % 4"},
		{"batchnorm in unequal pieces of two runs", pinned("72_batchnorm_avgpool_avgpool", &uneven33), "n = tl.minimum(17969, 35937 - piece * 17969)"},
		{"x - mean from partial results, an odd length", pinned("15_batchnorm_subtract", &odd15), "v = (v.to(tl.float64) + tl.load(coef_ptr"},
		{"layernorm past a row kernel", pinned("3_sum_layernorm_avgpool_gelu", &rows4096), "(e1_ptr + i % 4096, mask=ok"},
		{"fused ops on bias-only residues", func(t *testing.T) *plan.Plan {
			s, err := spec.Parse("gw_fused.yaml", []byte(gwFusedSpec))
			if err != nil {
				t.Fatal(err)
			}
			return tritonChainPlan(t, s, spec.Triton{FuseW: true, BlockM: 16, BlockN: 16, BlockK: 16})
		}, "gw_fused_store_ops(bias_only)"},
		{"store reads a per-channel parameter", func(t *testing.T) *plan.Plan {
			return plantFused(t, tritonChainPlan(t, shrink(t, level2("20_sum_residualadd_multiply_residualadd")), spec.Triton{}))
		}, "ch = g * C_OUT_G + tl.minimum(co, C_OUT_G - 1)"},
		{"a row's mean subtracted, ops after it", func(t *testing.T) *plan.Plan {
			s := shrink(t, level2("15_batchnorm_subtract"))
			s.Reference.Forward = []spec.Op{s.Reference.Forward[1], {Name: "tanh"}}
			return tritonChainPlan(t, s, spec.Triton{})
		}, "val = d.to(tl.float32)"},
		{"store reads a second input, fused W, channels last", func(t *testing.T) *plan.Plan {
			return plantFused(t, tritonChainPlan(t, shrink(t, level2("26_add_hardswish")),
				spec.Triton{ChannelsLast: true, FuseW: true, BlockM: 16, BlockN: 16, BlockK: 16}))
		}, "y_row[:, None] + (y_col + rw)[None, :], y_ok, e0_ptr)"},
	}
}

// TestLevel2TritonForms runs the forms the 19 problems with the default
// options leave out: the fused store on the W residues only the bias reaches, the store's
// tensor operands (per channel, per element), other tilings.
func TestLevel2TritonForms(t *testing.T) {
	python := python3(t)
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range tritonForms() {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			p := f.plan(t)
			if src := renderTriton(t, r, p); !strings.Contains(src, f.marker) {
				t.Fatalf("no %q in the file: not the form asked for", f.marker)
			}
			run := runTritonChain(t, r, python, p, nil, nil)
			run.check(t, p)
			name, e := run.worst()
			t.Logf("worst relative L2 error %.2e (%s)", e, name)
		})
	}
}

// TestLevel2TritonMutantsAreCaught plants a bug in one kernel of a
// level-2 Triton file (a string edit of the rendered file): the forward
// must fail (an error, a write count, unwritten outputs, or an error past
// 1e-5). Where the mutant needs a shifted input, the file as rendered
// must stay finite and close on that input.
func TestLevel2TritonMutantsAreCaught(t *testing.T) {
	python := python3(t)
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]tritonForm{}
	for _, f := range tritonForms() {
		forms[f.name] = f
	}
	replace := func(old, new string) func(string) string {
		return func(src string) string { return strings.Replace(src, old, new, -1) }
	}
	reg := func(re, new string) func(string) string {
		return func(src string) string { return regexp.MustCompile(re).ReplaceAllString(src, new) }
	}
	for _, m := range []struct {
		name, spec, form string // a shrunk level-2 problem, or a form
		edit             func(string) string
		shift            func(*gpu.Inputs)
		want             string // in the error, where it must be one
	}{
		{"max pool window one deep", "74_leakyrelu_multiply_leakyrelu_max", "", replace("for kd in range(2):", "for kd in range(1):"), nil, ""},
		{"store without the fused ops", "100_clamp_min_divide", "",
			replace("tl.store(y_ptrs, l2_100_clamp_min_divide_store_ops(acc), mask=y_ok)", "tl.store(y_ptrs, acc, mask=y_ok)"), nil, ""},
		{"channel sum one channel short", "78_max_max_sum", "", replace("mask=(c < C)[:, None] & p_ok[None, :], other=0.0)", "mask=(c < C - 1)[:, None] & p_ok[None, :], other=0.0)"), nil, ""},
		{"bias-only residues without the fused ops", "", "fused ops on bias-only residues", replace("gw_fused_store_ops(bias_only)", "bias_only"), nil, ""},
		{"store's parameter of the next channel", "", "store reads a per-channel parameter",
			replace("tl.minimum(co, C_OUT_G - 1)", "tl.minimum(co + 1, C_OUT_G - 1)"), nil, ""},
		{"store's second input one element off", "", "store reads a second input, fused W, channels last",
			replace("(y_col + rw)[None, :], y_ok, e0_ptr)", "(y_col + rw)[None, :] + 1, y_ok, e0_ptr)"), nil, ""},
		{"pool without the ops after it", "50_scaling_avgpool_biasadd_scaling", "",
			reg(`\n *v = l2_50_scaling_avgpool_biasadd_scaling_igemm_epi0_ops\(v, [^\n]*`, ""), nil, ""},
		{"pool's ops after it at the next channel", "50_scaling_avgpool_biasadd_scaling", "",
			reg(`(l2_50_scaling_avgpool_biasadd_scaling_igemm_epi0_ops\(v, )\(o // (\d+)\) % (\d+)`, "${1}(o // ${2} + 1) % ${3}"), nil, ""},
		{"softmax's ops after it at channel 0", "89_maxpool_softmax_subtract_swish_max", "",
			replace("_igemm_epi1_ops(v, tl.minimum(c, C - 1)[:, None], e0_ptr)", "_igemm_epi1_ops(v, 0, e0_ptr)"), nil, ""},
		{"channel reduction without the ops after it", "58_logsumexp_hardswish_subtract_clamp", "",
			reg(`\n *v = l2_58_logsumexp_hardswish_subtract_clamp_igemm_epi0_ops\(v, e0_ptr\)`, ""), nil, ""},
		{"row norm's weight at the next channel", "60_swish_groupnorm_hardswish", "",
			reg(`(tl\.load\(e\d+_ptr \+ )\(i // (\d+)\) % (\d+), mask=ok`, "${1}(i // ${2} + 1) % ${3}, mask=ok"), nil, ""},
		{"row norm's variance over one element less", "34_layernorm_gelu_scaling", "",
			replace("var = tl.sum(d * d, axis=1) / L", "var = tl.sum(d * d, axis=1) / (L - 1)"), nil, ""},
		{"group norm's coefficients of the next segment", "", "group norm from partial results, weight and bias per channel",
			replace("q = i // 5488  # the element's segment", "q = i // 5488 + 1  # the element's segment"), nil, ""},
		{"softmax's partial results without the rescale", "", "softmax over positions in pieces",
			replace("total = tl.where(grown > m, total * tl.exp(m - grown).to(tl.float64), total)", ""), nil, ""},
		{"softmax combining 3 of 4 partial results", "", "softmax over positions in pieces", replace("for k in range(PARTS):", "for k in range(PARTS - 1):"), nil, ""},
		{"stats pieces all at a run's start", "", "batchnorm in unequal pieces of two runs", replace(" + piece * 17969  # the piece's first element", "  # the piece's first element"), nil, ""},
		{"stats pieces of the second run at the first's", "", "batchnorm in unequal pieces of two runs", reg(` \+ r \* \d+ \+ piece`, " + piece"), nil, ""},
		{"running statistics of the next channel", "", "batchnorm in unequal pieces of two runs",
			replace("p = stats_ptr + 0 + 2 * 4 * c  # the channel's", "p = stats_ptr + 0 + 2 * 4 * (c + 1)  # the channel's"), nil, ""},
		{"x - mean from the sum of squares", "", "x - mean from partial results, an odd length", replace("total += tl.load(p + 2 * k, mask=ok", "total += tl.load(p + 2 * k + 1, mask=ok"), nil, ""},
		{"layernorm's weight at the channel", "", "layernorm past a row kernel", replace("e1_ptr + i % 4096", "e1_ptr + (i // 4096) % 8"), nil, ""},
		{"pool's last program not launched", "74_leakyrelu_multiply_leakyrelu_max", "",
			reg(`(l2_74_leakyrelu_multiply_leakyrelu_max_igemm_epi0)\[\((\d+),\)\]`, "${1}[(${2} - 1,)]"), nil, "nxt element"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			var p *plan.Plan
			if m.form != "" {
				p = forms[m.form].plan(t)
			} else {
				p = tritonChainPlan(t, shrink(t, filepath.Join("..", "..", "specs", "level2", m.spec+".yaml")), spec.Triton{})
			}
			src := renderTriton(t, r, p)
			if m.edit(src) == src {
				t.Fatalf("the edit does not apply to %s's Triton file", p.Spec.Name)
			}
			if m.shift != nil {
				base := runTritonChain(t, r, python, p, nil, m.shift)
				if base.err != nil || nanCount(base.y) > 0 {
					t.Fatalf("as rendered, on the shifted input: %v, %d NaN", base.err, nanCount(base.y))
				}
				// float32 logits near 1000 keep 6e-5 of their differences.
				if name, e := base.worst(); !(e < 1e-4) {
					t.Fatalf("as rendered, on the shifted input: %s: relative L2 error %.2e", name, e)
				}
			}
			run := runTritonChain(t, r, python, p, m.edit, m.shift)
			switch {
			case m.want != "":
				if run.err == nil || !strings.Contains(run.err.Error(), m.want) {
					t.Fatalf("error %v, want one saying %q", run.err, m.want)
				}
				t.Logf("caught: %v", strings.SplitN(run.err.Error(), "\n", 3)[1])
			case run.err != nil:
				t.Logf("caught: %v", run.err)
			case nanCount(run.y) > 0:
				t.Logf("caught: %d outputs NaN", nanCount(run.y))
			default:
				name, e := run.worst()
				if e <= 1e-5 {
					t.Fatalf("mutant %s of %s: relative L2 error %.2e (worst: %s), every output written: not caught", m.name, p.Spec.Name, e, name)
				}
				t.Logf("caught: %s: relative L2 error %.2e", name, e)
			}
		})
	}
}
