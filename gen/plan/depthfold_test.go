package plan

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
)

// TestDepthFoldIsTheDepthMean checks the fold's algebra on random
// convolutions (strides, paddings, output paddings, dilations, groups,
// depths where taps reach nothing): the float64 reference's mean over
// depth of the problem's output equals the folded convolution of the
// input's sums over the taps' ranges with the weight re-laid as the fold
// documents, channel ci*T + j holding tap Taps[j].K.
func TestDepthFoldIsTheDepthMean(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	checked, dropped := 0, 0
	for checked < 300 {
		c := randomFoldConv(rng)
		taps := depthTaps(c)
		if len(taps) == 0 {
			continue // every output is the bias: not folded
		}
		checked++
		if len(taps) < c.Kernel[0] {
			dropped++
		}
		f := &DepthFold{Problem: c, Taps: taps}
		fc := f.Conv()
		fo, po := fc.Out(), c.Out()
		if fo[1] != po[1] || fo[2] != po[2] || fo[0] != 1 || fc.InPerGroup() != c.InPerGroup()*len(taps) {
			t.Fatalf("%+v: folded %+v has output %v", c, fc, fc.Out())
		}
		x := random32(rng, c.InputLen())
		w := random32(rng, c.WeightLen())
		var b []float32
		if c.Bias {
			b = random32(rng, c.OutChannels)
		}
		y := ref.Forward(c, x, w, b)
		out := c.Out()
		hw := out[1] * out[2]
		want := make([]float64, c.Batch*c.OutChannels*hw)
		for nc := range c.Batch * c.OutChannels {
			for d := range out[0] {
				for i := range hw {
					want[nc*hw+i] += y[(nc*out[0]+d)*hw+i] / float64(out[0])
				}
			}
		}
		inHW := c.In[1] * c.In[2]
		sums := make([]float32, fc.InputLen())
		for nc := range c.Batch * c.InChannels {
			for j, tp := range taps {
				for i := range inHW {
					s := 0.0
					for d := tp.Lo; d < tp.Hi; d++ {
						s += float64(x[(nc*c.In[0]+d)*inHW+i])
					}
					sums[(nc*len(taps)+j)*inHW+i] = float32(s / float64(out[0]))
				}
			}
		}
		khw := c.Kernel[1] * c.Kernel[2]
		coutG := c.OutPerGroup()
		folded := make([]float32, fc.WeightLen())
		for ci := range c.InChannels {
			for j, tp := range taps {
				for co := range coutG {
					for k := range khw {
						folded[((ci*len(taps)+j)*coutG+co)*khw+k] = w[((ci*coutG+co)*c.Kernel[0]+tp.K)*khw+k]
					}
				}
			}
		}
		got := ref.Forward(fc, sums, folded, b)
		g32 := make([]float32, len(got))
		for i, v := range got {
			g32[i] = float32(v)
		}
		if e := ref.RelL2(g32, want); !(e < 1e-6) {
			t.Fatalf("%+v (taps %+v): folded convolution off the depth mean by %.3g", c, taps, e)
		}
	}
	if dropped == 0 {
		t.Errorf("no configuration had a tap that reaches nothing")
	}
}

// randomFoldConv is a small random valid convolution.
func randomFoldConv(rng *rand.Rand) geom.Conv {
	for {
		g := 1 + rng.Intn(2)
		c := geom.Conv{Batch: 1 + rng.Intn(2), InChannels: g * (1 + rng.Intn(2)), OutChannels: g * (1 + rng.Intn(2)), Groups: g, Bias: rng.Intn(2) == 0}
		for i := range 3 {
			c.In[i] = 1 + rng.Intn(4)
			c.Kernel[i] = 1 + rng.Intn(3)
			c.Stride[i] = 1 + rng.Intn(3)
			c.Dilation[i] = 1 + rng.Intn(2)
			c.Padding[i] = rng.Intn(3)
			c.OutputPadding[i] = rng.Intn(max(c.Stride[i], c.Dilation[i]))
		}
		if _, _, _, ok := c.LensChecked(); ok {
			return c
		}
	}
}

func random32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// TestDepthFoldPlanned: a forward that starts with a mean over depth is
// folded (its sums a prologue pass, the weight re-laid, the mean gone
// from the passes), one whose mean covers another axis too, or whose later
// ops read the convolution's output, is not.
func TestDepthFoldPlanned(t *testing.T) {
	s, err := spec.Load("../../specs/level2/13_mean_add_softmax_tanh_scaling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, SM90)
	if err != nil {
		t.Fatal(err)
	}
	f := p.DepthFold
	if f == nil {
		t.Fatal("#13 is not folded")
	}
	if want := []DepthTap{{0, 1, 32}, {1, 0, 32}, {2, 0, 31}}; !slices.Equal(f.Taps, want) {
		t.Errorf("taps %v, want %v", f.Taps, want)
	}
	if p.Conv.InChannels != 48 || p.Conv.In != [3]int{1, 128, 128} || p.Conv.Kernel != [3]int{1, 3, 3} || p.Out != [3]int{1, 128, 128} {
		t.Errorf("folded convolution %+v, output %v", p.Conv, p.Out)
	}
	ch := p.Epilogue.Chain
	if len(ch.Prologue) != 1 || ch.Prologue[0].Kind != "depthsum" || ch.Prologue[0].InLen != s.Problem.Conv.InputLen() || ch.Prologue[0].OutLen != p.Conv.InputLen() {
		t.Errorf("prologue %+v", ch.Prologue)
	}
	if ch.FoldWeight == nil || ch.FoldWeight.Len != p.Conv.WeightLen() {
		t.Errorf("weight re-layout %+v", ch.FoldWeight)
	}
	if ch.Final[2] != 1 || math.Abs(p.Conv.FLOPs()-s.Problem.Conv.FLOPs()*3/96) > 1 {
		t.Errorf("final %v, %.0f FLOPs", ch.Final, p.Conv.FLOPs())
	}
	sum := *s
	sum.Reference.Forward = slices.Clone(s.Reference.Forward)
	sum.Reference.Forward[0].Name = "sum"
	if p, err := New(&sum, SM90); err != nil || p.DepthFold == nil || p.DepthFold.Op != "sum" ||
		len(p.Epilogue.Ops) == 0 || p.Epilogue.Ops[0].Kind != "mul" || p.Epilogue.Ops[0].Num != 32 {
		t.Errorf("a sum over depth: %v, not folded as the mean times the output depth in the store", err)
	}
	for _, tc := range []struct {
		what string
		edit func(*spec.Spec)
	}{
		{"a mean over depth and height", func(s *spec.Spec) { s.Reference.Forward[0].Dims = []int{2, 3} }},
		{"a mean over height", func(s *spec.Spec) { s.Reference.Forward[0].Dims = []int{3} }},
		{"a later op reading the convolution's output", func(s *spec.Spec) {
			s.Reference.Forward[1].Operand = spec.Operand{Name: "conv"}
		}},
	} {
		e := *s
		e.Reference.Forward = slices.Clone(s.Reference.Forward)
		tc.edit(&e)
		if planDepthFold(&e) != nil {
			t.Errorf("%s: folded", tc.what)
		}
	}
}

// TestDepthFoldTritonUnfolded: only the CUDA file folds. A forward the
// Triton backend can run as written (#13's, a depth mean alone, a mean
// subtracted after it) keeps its Triton file, planned unfolded
// (Plan.Unfolded); one it cannot (the unfolded output past its 32-bit
// indices) leaves Triton out for the unfolded forward's reason, not for
// the fold; a Triton-only spec is never folded.
func TestDepthFoldTritonUnfolded(t *testing.T) {
	s, err := spec.Load("../../specs/level2/13_mean_add_softmax_tanh_scaling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(s, SM90)
	if err != nil {
		t.Fatal(err)
	}
	if p.DepthFold == nil || p.Unfolded == nil || p.TritonLeftOut != "" {
		t.Errorf("#13: fold %v, unfolded %v, Triton left out for %q", p.DepthFold != nil, p.Unfolded != nil, p.TritonLeftOut)
	}
	rows := *s
	rows.Reference.Forward = []spec.Op{s.Reference.Forward[0], {Name: "sub_mean", Dims: []int{2, 3, 4}}}
	if p, err := New(&rows, SM90); err != nil || p.DepthFold == nil || p.Unfolded == nil || p.TritonLeftOut != "" {
		t.Errorf("a mean subtracted after the depth mean: plan %+v (%v)", p, err)
	}
	// The same at a batch whose unfolded convolution output passes the
	// Triton chain kernels' 32-bit indices: the fold still plans.
	big := rows
	out := s.Problem.Conv.Out()
	big.Problem.Conv.Batch = (1<<31)/(s.Problem.Conv.OutChannels*out[0]*out[1]*out[2]) + 1
	if p, err := New(&big, SM90); err != nil || p.DepthFold == nil || p.Unfolded != nil || !strings.Contains(p.TritonLeftOut, "the Triton kernels after the convolution index in 32 bits") {
		t.Errorf("the unfolded output past 2^31 elements: plan %+v (%v)", p, err)
	}
	alone := *s
	alone.Reference.Forward = s.Reference.Forward[:1]
	for _, backends := range [][]string{nil, {"cuda", "triton"}} {
		a := alone
		a.Kernel.Backends, a.Kernel.BackendsOmitted = []string{"cuda", "triton"}, backends == nil
		p, err := New(&a, SM80)
		if err != nil {
			t.Fatalf("a depth mean alone, backends %v: %v", backends, err)
		}
		u := p.Unfolded
		if p.DepthFold == nil || p.TritonLeftOut != "" || !slices.Equal(p.Spec.Kernel.Backends, []string{"cuda", "triton"}) {
			t.Errorf("backends %v: fold %v, backends %v, Triton left out for %q", backends, p.DepthFold != nil, p.Spec.Kernel.Backends, p.TritonLeftOut)
		}
		if u == nil || u.DepthFold != nil || u.Conv != s.Problem.Conv || !slices.Equal(u.Spec.Kernel.Backends, []string{"triton"}) {
			t.Fatalf("backends %v: the Triton file's plan %+v", backends, u)
		}
		if len(u.Epilogue.Chain.Prologue) != 0 || len(u.Epilogue.Chain.Passes) != 1 || u.Epilogue.Chain.Passes[0].Kind != "reduce" {
			t.Errorf("backends %v: the Triton file's chain %+v", backends, u.Epilogue.Chain)
		}
	}
	triton := alone
	triton.Kernel.Backends = []string{"triton"}
	if p, err := New(&triton, SM90); err != nil || p.DepthFold != nil {
		t.Errorf("Triton alone: folded %v (%v)", p != nil && p.DepthFold != nil, err)
	}
}
