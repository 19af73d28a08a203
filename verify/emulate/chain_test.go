package emulate_test

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"convtgen/gen"
	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
	"convtgen/verify"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// shrunk are the level-2 problems in small: the same op chains, layers
// and conv geometry (kernel, stride, padding), batch 2 and a few
// channels and positions, keeping group counts, pool windows and
// LayerNorm's last axis (out_channels or norm_shape: the output's W)
// valid. Fields: the problem's input, its init_inputs, and forward's
// inputs with a shape.
var shrunk = map[string]struct {
	input, init string
	inputs      map[string]string
}{
	"l2_100_clamp_min_divide":                    {"[3, 4, 5]", "[4, 8, 3, 2, 1, -1.0, 2.0]", nil},
	"l2_13_mean_add_softmax_tanh_scaling":        {"[3, 4, 5]", "[4, 8, 3, 1, 1, 2.0]", nil},
	"l2_15_batchnorm_subtract":                   {"[3, 4, 5]", "[4, 8, 3, 2, 1]", nil},
	"l2_20_sum_residualadd_multiply_residualadd": {"[2, 3, 4]", "[4, 8, 3, 2, 1, 1, [8, 1, 1, 1]]", nil},
	"l2_26_add_hardswish":                        {"[2, 3, 4]", "[4, 8, 3, 2, 1, 1, [8, 1, 1, 1, 1]]", map[string]string{"add_input": "[2, 8, 4, 6, 8]"}},
	"l2_34_layernorm_gelu_scaling":               {"[2, 3, 4]", "[4, 8, 4, 2, 1, true, 1e-05, 1.0]", nil},
	"l2_38_avgpool_clamp_softmax_multiply":       {"[2, 3, 4]", "[4, 8, 3, 2, 1, 1, 2, 0.0, 1.0]", map[string]string{"x": "[2, 4, 4, 6, 8]"}},
	"l2_3_sum_layernorm_avgpool_gelu":            {"[2, 3, 4]", "[4, 8, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1.0, [8], [2, 2, 2]]", nil},
	"l2_49_softmax_sigmoid":                      {"[2, 3, 4]", "[4, 8, 3, 2, 1, 1]", nil},
	"l2_50_scaling_avgpool_biasadd_scaling":      {"[3, 3, 4]", "[3, 8, 3, 2, 1, 0.5, 1.0, [8, 1, 1, 1]]", nil},
	"l2_58_logsumexp_hardswish_subtract_clamp":   {"[2, 3, 4]", "[3, 8, 3, 2, 1, [1, 1, 1, 1]]", nil},
	"l2_60_swish_groupnorm_hardswish":            {"[2, 3, 4]", "[3, 8, 3, 2, 1, 4, 1e-05]", nil},
	"l2_61_relu_groupnorm":                       {"[2, 3, 3]", "[4, 16, 3, 8, false]", nil},
	"l2_72_batchnorm_avgpool_avgpool":            {"[3, 4, 5]", "[3, 8, 3, 2, 1, [8, 1, 1, 1]]", nil},
	"l2_74_leakyrelu_multiply_leakyrelu_max":     {"[2, 3, 4]", "[4, 8, 3, 2, 1, 1, [8, 1, 1, 1]]", nil},
	"l2_77_scale_batchnorm_globalavgpool":        {"[2, 2, 3]", "[4, 8, 5, 2.0]", nil},
	"l2_78_max_max_sum":                          {"[4, 4, 5]", "[4, 8, 5, 2, 2]", nil},
	"l2_89_maxpool_softmax_subtract_swish_max":   {"[2, 3, 4]", "[3, 8, 3, 2, 1, 1, 2, 2, 0]", nil},
	"l2_96_multiply_max_globalavgpool_clamp":     {"[3, 3, 4]", "[3, 8, 3, 2, 1, 0.5, 2]", nil},
}

// setKey sets key of mapping m to the YAML value v.
func setKey(t *testing.T, m *yaml.Node, key, v string) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(v), &n); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = n.Content[0]
			return
		}
	}
	t.Fatalf("no key %s", key)
}

func hasKey(m *yaml.Node, key string) bool {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return true
		}
	}
	return false
}

func getKey(t *testing.T, m *yaml.Node, key string) *yaml.Node {
	t.Helper()
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	t.Fatalf("no key %s", key)
	return nil
}

// shrink parses the level-2 spec at path with its sizes from shrunk:
// batch 2, in_channels and out_channels as init_inputs' first two.
func shrink(t *testing.T, path string) *spec.Spec {
	t.Helper()
	return shrinkWith(t, path, "", nil)
}

// shrinkWith is shrink with init_inputs initInputs instead of shrunk's (""
// keeps them) and the problem's keys in problem set to their YAML
// values (another geometry, kept consistent with init).
func shrinkWith(t *testing.T, path, initInputs string, problem map[string]string) *spec.Spec {
	t.Helper()
	return shrinkInputs(t, path, initInputs, problem, nil)
}

// shrinkInputs is shrinkWith with forward's inputs in inputs given
// shapes of their own (instead of shrunk's).
func shrinkInputs(t *testing.T, path, initInputs string, problem, inputs map[string]string) *spec.Spec {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	name := getKey(t, root, "name").Value
	sh, ok := shrunk[name]
	if !ok {
		t.Fatalf("%s: no small version in shrunk", name)
	}
	if initInputs != "" {
		sh.init = initInputs
	}
	if inputs != nil {
		sh.inputs = inputs
	}
	var init []any
	if err := yaml.Unmarshal([]byte(sh.init), &init); err != nil {
		t.Fatal(err)
	}
	p := getKey(t, root, "problem")
	setKey(t, p, "batch", "2")
	setKey(t, p, "in_channels", fmt.Sprint(init[0]))
	setKey(t, p, "out_channels", fmt.Sprint(init[1]))
	setKey(t, p, "input", sh.input)
	for k, v := range problem {
		if !hasKey(p, k) { // a key the spec leaves at its default
			p.Content = append(p.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: k}, &yaml.Node{Kind: yaml.ScalarNode, Value: "0"})
		}
		setKey(t, p, k, v)
	}
	r := getKey(t, root, "reference")
	setKey(t, r, "init_inputs", sh.init)
	for in, shape := range sh.inputs {
		found := false
		for _, n := range getKey(t, r, "inputs").Content {
			if getKey(t, n, "name").Value == in {
				setKey(t, n, "shape", shape)
				found = true
			}
		}
		if !found {
			t.Fatalf("%s: no input %s", name, in)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(path, out)
	if err != nil {
		t.Fatalf("%s in small: %v\n%s", name, err, out)
	}
	return s
}

// chainRun is one emulated forward with its float64 reference.
type chainRun struct {
	y          []float32
	want       []float64
	after      [][]float32
	wantAfter  [][]float64
	extraNames []string
	seed       uint64
	err        error
}

// chainInputs are a forward's inputs in small and their float64
// reference: the forward's input (before a prologue), the conv's weight
// and bias, the extras in the plan's order.
type chainInputs struct {
	x          []float32
	in         gpu.Inputs
	extras     [][]float32
	want       []float64
	wantAfter  [][]float64
	extraNames []string
}

// newChainInputs draws p's inputs (shift, if not nil, changes the
// convolution's before anything runs) and computes the float64 reference
// of its spec on them.
func newChainInputs(t *testing.T, p *plan.Plan, shift func(*gpu.Inputs)) chainInputs {
	t.Helper()
	ch := p.Epilogue.Chain
	c := p.Spec.Problem.Conv // the reference's (p.Conv, with a depth fold, is the folded one)
	in := gpu.MakeInputs(c, p.Spec.Problem.InputDist, 7)
	if shift != nil {
		shift(&in)
	}
	x := in.X
	rng := rand.New(rand.NewSource(9))
	x64 := ref.Tensor{Shape: []int{c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2]}}
	if len(p.Spec.Reference.Prologue) > 0 {
		x64.Shape = p.Spec.Reference.Inputs[0].Shape
		x = make([]float32, ch.Prologue[0].InLen)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
	}
	for _, v := range x {
		x64.Data = append(x64.Data, float64(v))
	}
	pooled, err := ref.Prologue(&p.Spec.Reference, x64)
	if err != nil {
		t.Fatal(err)
	}
	xc := make([]float32, len(pooled.Data))
	for i, v := range pooled.Data {
		xc[i] = float32(v) // the kernel's input after the prologue is float32 too
	}
	// The extras: random parameters (not their initial values, so that a
	// weight read for the wrong channel shows), running variances
	// positive, a count of batches.
	ci := chainInputs{x: x, in: in, extras: make([][]float32, len(ch.Extras))}
	byExpr := map[string][]float64{}
	for i, e := range ch.Extras {
		v := make([]float32, e.Len)
		for k := range v {
			switch {
			case e.Int64():
				v[k] = 3
			case strings.HasSuffix(e.Expr, "running_var"):
				v[k] = float32(0.5 + rng.Float64())
			default:
				v[k] = float32(rng.NormFloat64())
			}
		}
		ci.extras[i] = v
		f := make([]float64, e.Len)
		for k := range v {
			f[k] = float64(v[k])
		}
		byExpr[e.Expr] = f
		ci.extraNames = append(ci.extraNames, e.Expr)
	}
	o := c.Out()
	conv := ref.Tensor{Shape: []int{c.Batch, c.OutChannels, o[0], o[1], o[2]}, Data: ref.Forward(c, xc, in.W, in.B)}
	res, err := ref.Chain(&p.Spec.Reference, conv, func(expr string) []float64 {
		v, ok := byExpr[expr]
		if !ok {
			t.Fatalf("the reference reads %s, which the submission does not pass", expr)
		}
		return v
	})
	if err != nil {
		t.Fatal(err)
	}
	ci.want = res.Out.Data
	for _, e := range ch.Extras {
		w, ok := res.Updates[e.Expr]
		if !ok {
			w = byExpr[e.Expr] // unchanged
		}
		ci.wantAfter = append(ci.wantAfter, w)
	}
	return ci
}

// run is a chainRun of these inputs with the output and extras a
// forward gave.
func (ci chainInputs) run(y []float32, after [][]float32, seed uint64, err error) chainRun {
	return chainRun{y: y, want: ci.want, after: after, wantAfter: ci.wantAfter, extraNames: ci.extraNames, seed: seed, err: err}
}

// runChain renders p's CUDA submission, applies edit to its kernel
// source (nil: none), runs its whole forward on the CPU and computes the
// float64 reference of problem's spec on the same inputs.
func runChain(t *testing.T, r *gen.Renderer, dir string, p *plan.Plan, edit func(string) string) chainRun {
	t.Helper()
	kernel, host := cudaSources(t, r, p)
	if edit != nil {
		kernel = edit(kernel)
	}
	build := emulate.BuildChain
	if p.Spectral != nil {
		build = emulate.BuildSpectral
	}
	prog, err := build(context.Background(), cxx(t), dir, kernel, host, p)
	if err != nil {
		t.Fatal(err)
	}
	ci := newChainInputs(t, p, nil)
	y, after, err := prog.Run(context.Background(), ci.x, ci.in.W, ci.in.B, ci.extras)
	return ci.run(y, after, prog.Seed, err)
}

// cudaSources renders p's CUDA submission and returns its KERNEL_SOURCE
// and HOST_SOURCE.
func cudaSources(t *testing.T, r *gen.Renderer, p *plan.Plan) (kernel, host string) {
	t.Helper()
	src, err := mutate.RenderCUDA(r, p, p.Spec.Path)
	if err != nil {
		t.Fatal(err)
	}
	if kernel, err = verify.KernelSource(src); err != nil {
		t.Fatal(err)
	}
	if host, err = verify.HostSource(src); err != nil {
		t.Fatal(err)
	}
	return kernel, host
}

// worst is the largest relative L2 error of the run and what it is in:
// "output" or an extra's expression.
func (c chainRun) worst() (string, float64) {
	if len(c.y) != len(c.want) {
		return "output", math.Inf(1)
	}
	what, err := "output", ref.RelL2(c.y, c.want)
	for i := range c.after {
		if e := ref.RelL2(c.after[i], c.wantAfter[i]); !(e <= err) {
			what, err = c.extraNames[i], e
		}
	}
	return what, err
}

func (c chainRun) check(t *testing.T, what fmt.Stringer) {
	t.Helper()
	if c.err != nil {
		t.Fatalf("%s: %v", what, c.err)
	}
	if nan := nanCount(c.y); nan > 0 {
		t.Fatalf("%s (seed %d): %d of %d outputs not written", what, c.seed, nan, len(c.y))
	}
	name, err := c.worst()
	if !(err <= 1e-5) {
		t.Fatalf("%s (seed %d): %s: relative L2 error %.2e > 1e-5", what, c.seed, name, err)
	}
	t.Logf("%s: worst relative L2 error %.2e (%s)", what, err, name)
}

func level2Specs(t *testing.T) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "specs", "level2", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no level-2 specs: %v", err)
	}
	return paths
}

// smallPlan plans s for target with the spec's own kernel section.
func smallPlan(t *testing.T, s *spec.Spec, target plan.Target) *plan.Plan {
	t.Helper()
	p, err := plan.New(s, target)
	if err != nil {
		t.Fatalf("%s for %s: %v", s.Name, target.Name, err)
	}
	return p
}

// TestLevel2ForwardMatchesReference runs every level-2 problem in small,
// the whole forward (prologue, convolution, passes, BatchNorm updates)
// as the host wrapper launches it, for both targets: every output
// written, relative L2 within 1e-5 of the float64 reference on the output
// and on the running statistics. The small version's store applies the
// ops the full problem's does, reading the same tensors the same way
// (gen/plan's TestLeadingPointwiseOpsFuse says which those are).
func TestLevel2ForwardMatchesReference(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	paths := level2Specs(t)
	if len(paths) != len(shrunk) {
		t.Fatalf("%d level-2 specs, %d small versions", len(paths), len(shrunk))
	}
	for _, path := range paths {
		for _, target := range []plan.Target{plan.SM80, plan.SM90} {
			s := shrink(t, path)
			t.Run(s.Name+"/"+target.Name, func(t *testing.T) {
				t.Parallel()
				p := smallPlan(t, s, target)
				full, err := spec.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				fp, err := plan.New(full, target)
				if err != nil {
					t.Fatal(err)
				}
				if got, want := storeSays(p), storeSays(fp); got != want {
					t.Fatalf("in small the store applies %s, in full %s", got, want)
				}
				runChain(t, r, dir, p, nil).check(t, p)
			})
		}
	}
}

// storeSays lists the ops p's store applies and the tensors they read.
func storeSays(p *plan.Plan) string {
	var ops, reads []string
	for _, op := range p.Epilogue.Ops {
		ops = append(ops, op.Kind)
	}
	for _, e := range p.Epilogue.Extras {
		reads = append(reads, p.Epilogue.Chain.Extras[e.Arg].Expr+" per "+e.Read)
	}
	return fmt.Sprintf("%v reading %v", ops, reads)
}

// Geometries that put a level-2 problem's passes in the kernel forms the
// shrunk problems do not reach: rows across warps, long segments in
// partial sums (several pieces a run, pieces of unequal length), a block
// reduction across warps, channels past the registers.
var (
	// #3 over rows of 1000 (64 threads a row, the last chunk ragged) and
	// of 4096 (past a row kernel: partial sums, the weight at the last
	// axis).
	rows1000 = pin{init: "[4, 8, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1.0, [1000], [2, 2, 2]]", problem: map[string]string{"input": "[1, 1, 500]"}}
	rows4096 = pin{init: "[4, 8, [3, 3, 3], [2, 2, 2], [1, 1, 1], [1, 1, 1], 1.0, [4096], [2, 2, 2]]", problem: map[string]string{"input": "[1, 1, 2048]"}}
	// #38's softmax over 1024 positions (a row kernel across warps) and
	// over 65536 (4 pieces a segment).
	softmax1024  = pin{problem: map[string]string{"input": "[2, 4, 16]"}, inputs: map[string]string{"x": "[2, 4, 4, 8, 32]"}}
	softmax65536 = pin{problem: map[string]string{"input": "[4, 32, 64]"}, inputs: map[string]string{"x": "[2, 4, 8, 64, 128]"}}
	// #61's groups of 2 x 14^3, #72's channels of 2 runs of 33^3 (2
	// pieces a run, of 17969 and 17968), #15 with 5 channels of 15^3 (an
	// odd length: a float a thread), #96's means over 7^3 (two warps).
	groups5488  = pin{problem: map[string]string{"input": "[12, 12, 12]"}}
	uneven33    = pin{problem: map[string]string{"input": "[17, 17, 17]"}}
	odd15       = pin{init: "[4, 5, 3, 2, 1]", problem: map[string]string{"input": "[8, 8, 8]"}}
	means343    = pin{problem: map[string]string{"input": "[8, 8, 8]"}}
	channels72  = pin{init: "[4, 72, 3, 2, 1, 1]"}
	logsumexp72 = pin{init: "[3, 72, 3, 2, 1, [1, 1, 1, 1]]"}
)

// pin is a problem's geometry other than shrunk's (init_inputs, problem
// keys, forward's input shapes; empty keeps shrunk's) and a kernel
// family (nil: smallPlan's).
type pin struct {
	init            string
	problem, inputs map[string]string
	family          spec.Family
}

// pinnedPlan plans spec name (a file of specs/level2 without .yaml) in
// geometry g for sm80.
func pinnedPlan(t *testing.T, name string, g *pin) *plan.Plan {
	t.Helper()
	path := filepath.Join("..", "..", "specs", "level2", name+".yaml")
	if g == nil {
		return smallPlan(t, shrink(t, path), plan.SM80)
	}
	s := shrinkInputs(t, path, g.init, g.problem, g.inputs)
	if g.family == nil {
		return smallPlan(t, s, plan.SM80)
	}
	s.Kernel.CUDA = spec.CUDA{Family: g.family}
	p, err := plan.New(s, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// passOf is the first pass of p's chain that has, by is, or nil.
func passOf(p *plan.Plan, is func(plan.Pass) bool) *plan.Pass {
	for i, q := range p.Epilogue.Chain.Passes {
		if is(q) {
			return &p.Epilogue.Chain.Passes[i]
		}
	}
	return nil
}

// TestLevel2PassForms runs whole forwards in the geometries above, each
// first checked to plan the kernel form it is here for, against the
// float64 reference.
func TestLevel2PassForms(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name, spec string
		geom       *pin
		is         func(plan.Pass) bool
	}{
		{"layernorm rows across warps, ragged", "3_sum_layernorm_avgpool_gelu", &rows1000, func(q plan.Pass) bool {
			return q.Kind == "rownorm" && q.Row.Lanes == 64 && q.Row.Ragged
		}},
		{"layernorm past a row kernel", "3_sum_layernorm_avgpool_gelu", &rows4096, func(q plan.Pass) bool {
			return q.Kind == "normalise" && q.Norm.LastAxis && !q.Fold
		}},
		{"softmax rows across warps", "38_avgpool_clamp_softmax_multiply", &softmax1024, func(q plan.Pass) bool {
			return q.Kind == "rownorm" && q.Stat == "softmax" && q.Row.Lanes == 64
		}},
		{"softmax over positions in pieces", "38_avgpool_clamp_softmax_multiply", &softmax65536, func(q plan.Pass) bool {
			return q.Kind == "stats" && q.Stat == "softmax" && q.Part.Pieces == 4 && q.Part.Vec == 4
		}},
		{"group norm from partial sums", "61_relu_groupnorm", &groups5488, func(q plan.Pass) bool {
			return q.Kind == "normalise" && !q.Fold && q.Norm.Weight >= 0 && q.Point.VecChannel
		}},
		{"batchnorm in unequal pieces", "72_batchnorm_avgpool_avgpool", &uneven33, func(q plan.Pass) bool {
			return q.Kind == "stats" && q.Seg.Runs == 2 && q.Part.Pieces == 2 && q.Seg.RunLen%q.Part.PieceLen != 0
		}},
		{"x - mean from partial sums, a float a thread", "15_batchnorm_subtract", &odd15, func(q plan.Pass) bool {
			return q.Kind == "normalise" && q.Norm.SubMean && q.Point.Vec == 1
		}},
		{"means of runs across warps", "96_multiply_max_globalavgpool_clamp", &means343, func(q plan.Pass) bool {
			return q.Kind == "reduce" && q.Run == 343 && q.Threads == 64 && len(q.Ops) == 1
		}},
		{"softmax of channels past the registers", "49_softmax_sigmoid", &channels72, func(q plan.Pass) bool {
			return q.Kind == "channel" && q.Reduce == "softmax" && !q.Hold && len(q.Ops) == 1
		}},
		{"logsumexp of channels past the registers", "58_logsumexp_hardswish_subtract_clamp", &logsumexp72, func(q plan.Pass) bool {
			return q.Kind == "channel" && q.Reduce == "logsumexp" && !q.Hold && len(q.Ops) == 3
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := pinnedPlan(t, c.spec, c.geom)
			if passOf(p, c.is) == nil {
				t.Fatalf("%s: no pass of the form asked for in %+v", p.Spec.Name, p.Epilogue.Chain.Passes)
			}
			runChain(t, r, dir, p, nil).check(t, p)
		})
	}
}

// TestDepthFoldForwards runs #13's forward (a depth mean first: folded)
// where its depth taps cover unequal ranges at stride 2, and where a
// tap reaches no output at stride 4 (the weight re-layout's tap table),
// against the float64 reference of the unfolded forward.
func TestDepthFoldForwards(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		geom pin
		taps []plan.DepthTap
	}{
		{"stride 2, padding 2", pin{init: "[4, 8, 3, 2, 2, 2.0]", problem: map[string]string{"input": "[3, 4, 5]", "stride": "2", "padding": "2"}},
			[]plan.DepthTap{{K: 0, Lo: 1, Hi: 3}, {K: 1, Lo: 1, Hi: 2}, {K: 2, Lo: 0, Hi: 2}}},
		{"stride 4, a tap reaching nothing", pin{init: "[4, 8, 3, 4, 2, 2.0]", problem: map[string]string{"input": "[2, 4, 5]", "stride": "4", "padding": "2"}},
			[]plan.DepthTap{{K: 0, Lo: 1, Hi: 2}, {K: 2, Lo: 0, Hi: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := pinnedPlan(t, "13_mean_add_softmax_tanh_scaling", &c.geom)
			if p.DepthFold == nil || !slices.Equal(p.DepthFold.Taps, c.taps) {
				t.Fatalf("fold %+v, want taps %v", p.DepthFold, c.taps)
			}
			runChain(t, r, dir, p, nil).check(t, p)
		})
	}
	// A sum over depth, without keepdim, folds as the mean times the
	// output depth (the bias counted once a depth), and the ops after it
	// see the depth axis gone.
	t.Run("a sum over depth", func(t *testing.T) {
		t.Parallel()
		g := pin{init: "[4, 8, 3, 2, 2, 2.0]", problem: map[string]string{"input": "[3, 4, 5]", "stride": "2", "padding": "2"}}
		s := shrinkInputs(t, filepath.Join("..", "..", "specs", "level2", "13_mean_add_softmax_tanh_scaling.yaml"), g.init, g.problem, g.inputs)
		s.Reference.Forward = slices.Clone(s.Reference.Forward)
		s.Reference.Forward[0].Name, s.Reference.Forward[0].Keepdim = "sum", false
		s.Reference.Forward[1].Operand.View = []int{1, -1, 1, 1}
		p := smallPlan(t, s, plan.SM80)
		if p.DepthFold == nil || p.DepthFold.Op != "sum" {
			t.Fatalf("fold %+v, want a sum's", p.DepthFold)
		}
		runChain(t, r, dir, p, nil).check(t, p)
	})
}

// TestLevel2MutantsAreCaught plants a bug in one pass of a problem (a
// string edit of the emitted kernel source): the check must fail.
func TestLevel2MutantsAreCaught(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	replace := func(old, new string) func(string) string {
		return func(k string) string { return strings.ReplaceAll(k, old, new) }
	}
	replaceFirst := func(old, new string) func(string) string {
		return func(k string) string { return strings.Replace(k, old, new, 1) }
	}
	for _, m := range []struct {
		name, spec string
		edit       func(string) string
		pin        *pin // another geometry or kernel family (else smallPlan's)
	}{
		{"batchnorm epsilon 1e-3", "15_batchnorm_subtract", replaceFirst("0.0) + 1.0000000000000001e-05)", "0.0) + 0.001)"), nil},
		{"group norm by channels", "61_relu_groupnorm", replace(" / 5488", " / 2744"), &groups5488},
		{"row kernel skipping the last lane's elements", "61_relu_groupnorm", replaceFirst("if (off < 200) {", "if (off < 200 && lane < 15) {"), nil},
		{"row kernel adding one warp of two", "38_avgpool_clamp_softmax_multiply", replace("for (int w = 1; w < 2; ++w)", "for (int w = 1; w < 1; ++w)"), &softmax1024},
		{"layernorm weight at the channel", "3_sum_layernorm_avgpool_gelu", replace("(int)(i % 4096)", "(int)(i / 4096 % 8)"), &rows4096},
		{"merged op applied twice", "49_softmax_sigmoid", replace("v = 1.0f / (1.0f + expf(-v));", "v = 1.0f / (1.0f + expf(-v)); v = 1.0f / (1.0f + expf(-v));"), nil},
		{"online softmax without its rescale", "38_avgpool_clamp_softmax_multiply", replace("sum *= (double)expf(m - v);", ""), &softmax65536},
		{"normalise reading 3 of 4 partial results", "38_avgpool_clamp_softmax_multiply", replace("k < 4; k += 32", "k < 3; k += 32"), &softmax65536},
		{"stats pieces all at a run's start", "72_batchnorm_avgpool_avgpool", replace(" + piece * 17969;", ";"), &uneven33},
		{"block sum dropping a warp", "96_multiply_max_globalavgpool_clamp", replace("threadIdx.x < 2 ? red[threadIdx.x]", "threadIdx.x < 1 ? red[threadIdx.x]"), &means343},
		{"running variance momentum backwards", "77_scale_batchnorm_globalavgpool",
			replaceFirst("(1.0 - 0.1) * running_var[c] + 0.1 * var", "0.1 * running_var[c] + (1.0 - 0.1) * var"), nil},
		{"running statistics of the next channel", "72_batchnorm_avgpool_avgpool",
			replaceFirst("const double* p = parts + 0 + 2 * c * 2;", "const double* p = parts + 0 + 2 * c * 2 + 4;"), nil},
		{"batches counted twice", "72_batchnorm_avgpool_avgpool", replaceFirst("batches[0] += 1;", "batches[0] += 2;"), nil},
		{"max pool window 1 deep", "74_leakyrelu_multiply_leakyrelu_max", replaceFirst("kd < 2;", "kd < 1;"), nil},
		{"softmax summing 7 of 8 channels", "49_softmax_sigmoid", replaceFirst("        sum += r[c];", "        sum += c > 0 ? r[c] : 0.0f;"), nil},
		{"fused divide by 2.5", "100_clamp_min_divide", replaceFirst("v = v / 2.0f;", "v = v / 2.5f;"), nil},
		{"mma store without the fused ops", "100_clamp_min_divide", replaceFirst("= epilogue(acc[i][j][half * 2 + e]", "= (acc[i][j][half * 2 + e]"),
			&pin{family: spec.MMA{}}},
		{"fill without the fused ops", "100_clamp_min_divide", replaceFirst("y[i] = epilogue(bias[", "y[i] = (bias["),
			&pin{init: "[4, 8, 3, 4, 1, -1.0, 2.0]", problem: map[string]string{"stride": "4"}, family: spec.WGMMA{}}},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			p := pinnedPlan(t, m.spec, m.pin)
			edited := false
			run := runChain(t, r, dir, p, func(k string) string {
				e := m.edit(k)
				edited = e != k
				return e
			})
			if !edited {
				t.Fatalf("the edit does not apply to %s's kernel source", p.Spec.Name)
			}
			if run.err != nil {
				t.Logf("caught: %v", strings.SplitN(run.err.Error(), "\n", 2)[0])
				return
			}
			if nan := nanCount(run.y); nan > 0 {
				t.Logf("caught: %d outputs NaN", nan)
				return
			}
			name, e := run.worst()
			if e <= 1e-5 {
				t.Fatalf("mutant %s of %s: relative L2 error %.2e (worst: %s), every output written: not caught", m.name, p.Spec.Name, e, name)
			}
			t.Logf("caught: %s: relative L2 error %.2e", name, e)
		})
	}
}

// TestLevel2FusedStores pins the kernel families of problems whose
// leading pointwise ops the store applies (plan.Epilogue.Ops), on sm80
// (where the wgmma tile runs as mma.sync) and the wgmma tiles on sm90 too,
// so that every family's store and the fill of tap-less phases are
// checked with them.
func TestLevel2FusedStores(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// 100: clamp then divide; 61: relu (then a group norm pass). Stride
	// 4 over a kernel of 3 leaves phases no tap reaches.
	tapless := map[string]string{"stride": "4"}
	wide := map[string]string{"kernel": "4", "input": "[3, 4, 4]"}
	for _, c := range []struct {
		name, spec, init string
		problem          map[string]string
		family           spec.Family
		is               func(plan.Tile) bool
		fill             bool
	}{
		{"ffma", "100_clamp_min_divide", "", nil, spec.FFMA{}, func(t plan.Tile) bool { return t.FFMA != nil }, false},
		{"mma", "100_clamp_min_divide", "", nil, spec.MMA{}, func(t plan.Tile) bool { return t.MMA != nil }, false},
		{"direct", "61_relu_groupnorm", "", nil, spec.Direct{}, func(t plan.Tile) bool { return t.Direct != nil && t.TW() == 0 }, false},
		{"direct window", "100_clamp_min_divide", "", nil, spec.Direct{TW: 2}, func(t plan.Tile) bool { return t.TW() == 2 }, false},
		{"direct window float4", "100_clamp_min_divide", "[4, 8, 4, 2, 1, -1.0, 2.0]", wide, spec.Direct{TW: 4},
			func(t plan.Tile) bool { return t.TW() == 4 }, false},
		{"wgmma", "100_clamp_min_divide", "", nil, spec.WGMMA{}, func(t plan.Tile) bool { return t.WGMMA != nil }, false},
		{"wgmma winograd", "61_relu_groupnorm", "", nil, spec.WGMMA{Winograd: true}, func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.Winograd }, false},
		{"wgmma kw_in_n", "100_clamp_min_divide", "", nil, spec.WGMMA{KWInN: true}, func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.KWInN }, false},
		{"wgmma fill", "100_clamp_min_divide", "[4, 8, 3, 4, 1, -1.0, 2.0]", tapless, spec.WGMMA{}, func(t plan.Tile) bool { return t.WGMMA != nil }, true},
		{"wgmma kw_in_n fill", "100_clamp_min_divide", "[4, 8, 3, 4, 1, -1.0, 2.0]", tapless, spec.WGMMA{KWInN: true},
			func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.KWInN }, true},
		{"ffma tap-less", "100_clamp_min_divide", "[4, 8, 3, 4, 1, -1.0, 2.0]", tapless, spec.FFMA{}, func(t plan.Tile) bool { return t.FFMA != nil }, false},
	} {
		targets := []plan.Target{plan.SM80}
		if _, ok := c.family.(spec.WGMMA); ok {
			targets = append(targets, plan.SM90)
		}
		for _, target := range targets {
			t.Run(c.name+"/"+target.Name, func(t *testing.T) {
				t.Parallel()
				s := shrinkWith(t, filepath.Join("..", "..", "specs", "level2", c.spec+".yaml"), c.init, c.problem)
				s.Kernel.CUDA = spec.CUDA{Family: c.family}
				p, err := plan.New(s, target)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Epilogue.Ops) == 0 || !c.is(p.Tile) || (p.Names.Fill != "") != c.fill {
					t.Fatalf("%s: %d fused ops, tile %+v, fill %q: not the case asked for", c.name, len(p.Epilogue.Ops), p.Tile, p.Names.Fill)
				}
				runChain(t, r, dir, p, nil).check(t, p)
			})
		}
	}
}
