package plan

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"convtgen/gen/spec"
)

// level2Plans plans every level-2 spec for target.
func level2Plans(t *testing.T, target Target) map[string]*Plan {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "specs", "level2", "*.yaml"))
	if err != nil || len(paths) != 19 {
		t.Fatalf("%d level-2 specs: %v", len(paths), err)
	}
	plans := map[string]*Plan{}
	for _, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(s, target)
		if err != nil {
			t.Fatalf("%s for %s: %v", s.Name, target.Name, err)
		}
		plans[s.Name] = p
	}
	return plans
}

// form is a pass in words: its kind, what it reduces or the norm it
// applies, and the pointwise ops it applies before writing (+N).
func form(q Pass) string {
	f := q.Kind
	switch q.Kind {
	case "channel", "reduce":
		f += " " + q.Reduce
	case "stats":
		f += " " + q.Stat
	case "normalise", "rownorm":
		switch {
		case q.Norm.Softmax:
			f += " softmax"
		case q.Norm.SubMean:
			f += " sub_mean"
		}
	}
	if len(q.Ops) > 0 && q.Kind != "pointwise" {
		f += fmt.Sprintf(" +%d", len(q.Ops))
	}
	return f
}

// TestLevel2Kernels says which kernels each level-2 problem runs after
// the convolution (past a leading pointwise pass, which the store may
// take; TestLeadingPointwiseOpsFuse covers that one): LayerNorm over the
// last axis (64 elements a row) as one row kernel; long segments as
// partial sums and a normalising kernel; the pointwise ops after a
// reduction, a pool or a norm applied by it (+N), with no kernel of
// their own; a stats buffer only where a stats kernel fills it.
func TestLevel2Kernels(t *testing.T) {
	want := map[string][]string{
		"l2_100_clamp_min_divide":                    nil,
		"l2_13_mean_add_softmax_tanh_scaling":        {"channel softmax +2"}, // the depth mean: a depth fold
		"l2_15_batchnorm_subtract":                   {"stats moments", "normalise", "stats moments", "normalise sub_mean"},
		"l2_20_sum_residualadd_multiply_residualadd": nil,
		"l2_26_add_hardswish":                        nil,
		"l2_34_layernorm_gelu_scaling":               {"rownorm +2"},
		"l2_38_avgpool_clamp_softmax_multiply":       {"stats softmax", "normalise softmax +1"},
		"l2_3_sum_layernorm_avgpool_gelu":            {"rownorm", "pool +1"},
		"l2_49_softmax_sigmoid":                      {"channel softmax +1"},
		"l2_50_scaling_avgpool_biasadd_scaling":      {"pool +2"},
		"l2_58_logsumexp_hardswish_subtract_clamp":   {"channel logsumexp +3"},
		"l2_60_swish_groupnorm_hardswish":            {"stats moments", "normalise +1"},
		"l2_61_relu_groupnorm":                       {"stats moments", "normalise"},
		"l2_72_batchnorm_avgpool_avgpool":            {"stats moments", "normalise", "pool", "pool"},
		"l2_74_leakyrelu_multiply_leakyrelu_max":     {"pool"},
		"l2_77_scale_batchnorm_globalavgpool":        {"stats moments", "normalise", "reduce mean"},
		"l2_78_max_max_sum":                          {"pool", "pool", "channel sum"},
		"l2_89_maxpool_softmax_subtract_swish_max":   {"pool", "channel softmax +2", "channel max"},
		"l2_96_multiply_max_globalavgpool_clamp":     {"pool", "reduce mean +1"},
	}
	for _, target := range []Target{SM80, SM90} {
		for name, p := range level2Plans(t, target) {
			ch := p.Epilogue.Chain
			passes := ch.Passes
			if len(passes) > 0 && passes[0].Kind == "pointwise" {
				passes = passes[1:]
			}
			var got []string
			stats := 0
			for _, q := range passes {
				got = append(got, form(q))
				if q.Kind == "pointwise" {
					t.Errorf("%s: a pointwise kernel after another: %+v", name, q)
				}
				if q.Kind == "stats" {
					stats++
				}
			}
			if w, ok := want[name]; !ok || !slices.Equal(got, w) {
				t.Errorf("%s for %s: kernels %q, want %q", name, target.Name, got, w)
			}
			if len(ch.Slots) != stats {
				t.Errorf("%s: %d stats slots for %d stats kernels", name, len(ch.Slots), stats)
			}
		}
	}
	plans := level2Plans(t, SM90)
	// #34: 16 threads' worth of a row of 64 in 4 threads, float4s, no
	// guards (4194304 rows, 64 a block).
	if r := plans["l2_34_layernorm_gelu_scaling"].Epilogue.Chain.Passes[0].Row; r != (RowLayout{Len: 64, Vec: 4, Lanes: 4, Chunks: 4, Rows: 64, RowChannel: true}) {
		t.Errorf("#34's row layout %+v", r)
	}
	// #15: BatchNorm's channels are 16 runs of 123039, 2 pieces each (32
	// partial results a channel, weight and bias folded in); the means of
	// (sample, channel) 2 pieces each.
	p15 := plans["l2_15_batchnorm_subtract"].Epilogue.Chain
	if l := p15.Passes[0].Part; l != (PartLayout{Pieces: 2, PieceLen: 61520, Parts: 32, Vec: 1}) || !p15.Passes[1].Fold || p15.Updates[0].Parts != 32 {
		t.Errorf("#15's BatchNorm: %+v, fold %t, update %+v", l, p15.Passes[1].Fold, p15.Updates[0])
	}
	if l := p15.Passes[2].Part; l.Parts != 2 || p15.Passes[3].Fold || p15.Passes[3].Point.Segs != 2 {
		t.Errorf("#15's means: %+v, normalise %+v", l, p15.Passes[3].Point)
	}
	// #96 and #77: a block a mean, coalesced (14415 and 25920 elements).
	for name, run := range map[string]int{"l2_96_multiply_max_globalavgpool_clamp": 14415, "l2_77_scale_batchnorm_globalavgpool": 25920} {
		ps := plans[name].Epilogue.Chain.Passes
		if q := ps[len(ps)-1]; q.Run != run || q.Threads != 256 || q.Blocks != 2048 {
			t.Errorf("%s's mean: run %d, %d threads, %d blocks", name, q.Run, q.Threads, q.Blocks)
		}
	}
	// Every level-2 tensor fits int offsets.
	for name, p := range plans {
		for _, q := range p.Epilogue.Chain.Passes {
			if q.Wide {
				t.Errorf("%s: %s wide", name, q.Name)
			}
		}
	}
}

// TestWidePasses: a pass whose tensors reach 2^31 elements computes its
// offsets in 64 bits, and one just under keeps ints.
func TestWidePasses(t *testing.T) {
	s, err := spec.Load(filepath.Join("..", "..", "specs", "level2", "34_layernorm_gelu_scaling.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for batch, wide := range map[int]bool{32: false, 256: true} {
		s.Problem.Batch = batch
		p, err := New(s, SM80)
		if err != nil {
			t.Fatal(err)
		}
		if q := p.Epilogue.Chain.Passes[0]; q.Wide != wide {
			t.Errorf("batch %d: %d elements, wide %t", batch, q.InLen, q.Wide)
		}
	}
}

// TestSegmentsContiguous: rows one after another, and the forms that are
// not (a BatchNorm's channel of several samples).
func TestSegmentsContiguous(t *testing.T) {
	x := [5]int{2, 8, 3, 4, 5}
	dhw := 60
	for _, c := range []struct {
		name string
		g    Segments
		want bool
	}{
		{"per channel", perChannel(x), true},
		{"layernorm rows", Segments{Count: 2 * 8 * 12, Inner: 1, Outer: 5, RunLen: 5, Runs: 1, RunStride: 5, Div: 5}, true},
		{"groups of 4 channels", Segments{Count: 4, Inner: 1, Outer: 4 * dhw, RunLen: 4 * dhw, Runs: 1, RunStride: 4 * dhw, Div: 4 * dhw}, true},
		{"batchnorm of 2 samples", Segments{Count: 8, Inner: 8, Outer: 0, RunLen: dhw, Runs: 2, RunStride: 8 * dhw, Div: dhw, Mod: 8}, false},
		{"batchnorm of 1 sample", Segments{Count: 8, Inner: 8, Outer: 0, RunLen: dhw, Runs: 1, RunStride: 8 * dhw, Div: dhw, Mod: 8}, true},
	} {
		if got := c.g.Contiguous(); got != c.want {
			t.Errorf("%s: contiguous %t, want %t", c.name, got, c.want)
		}
		if !c.want {
			continue
		}
		// Contiguous: segment s starts at s*L.
		l := c.g.Elements()
		for s := range c.g.Count {
			if base := (s/c.g.Inner)*c.g.Outer + (s%c.g.Inner)*c.g.RunLen; base != s*l {
				t.Errorf("%s: segment %d starts at %d, not %d", c.name, s, base, s*l)
			}
		}
	}
}

// TestRowLayoutsCoverRows: for every row length a row kernel takes, the
// slots of a row's threads hold each element once, at most 16 a thread,
// and Ragged says whether some slot lies past the row.
func TestRowLayoutsCoverRows(t *testing.T) {
	for n := 1; n <= MaxRow; n++ {
		l := rowLayout(n, 1000, 64)
		seen := make([]int, n)
		past := false
		for lane := range l.Lanes {
			for q := range l.Chunks {
				off := q*l.Lanes*l.Vec + lane*l.Vec
				if off >= n {
					past = true
					continue
				}
				for k := range l.Vec {
					seen[off+k]++
				}
			}
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("row of %d (%+v): element %d held %d times", n, l, i, c)
			}
		}
		if past != l.Ragged || l.Values() > 16 || l.Lanes*l.Rows != passThreads || n%l.Vec != 0 || l.Lanes > 32 && l.Lanes%32 != 0 {
			t.Fatalf("row of %d: %+v (a slot past the row: %t)", n, l, past)
		}
	}
	if l := rowLayout(64, 1000, 4096); !l.RowGuard || !l.RowChannel {
		t.Errorf("1000 rows of 64 by %d a block: %+v", l.Rows, l)
	}
}

// TestPartLayoutsCoverRuns: a stats kernel's pieces cover each run once,
// start at multiples of Vec, and are split only down to partMin elements.
func TestPartLayoutsCoverRuns(t *testing.T) {
	for _, g := range []Segments{
		perChannel([5]int{16, 32, 31, 63, 63}),
		perChannel([5]int{2, 8, 64, 64, 64}),
		{Count: 32, Inner: 32, RunLen: 123039, Runs: 16, RunStride: 32 * 123039, Div: 123039, Mod: 32},
		{Count: 8, Inner: 8, RunLen: 35937, Runs: 2, RunStride: 8 * 35937, Div: 35937, Mod: 8},
		{Count: 1, Inner: 1, Outer: 1 << 24, RunLen: 1 << 24, Runs: 1, RunStride: 1 << 24, Div: 1 << 24},
	} {
		l := partLayout(g)
		covered := l.Pieces * l.PieceLen
		if covered < g.RunLen || covered-l.PieceLen >= g.RunLen || l.PieceLen%l.Vec != 0 || l.Parts != g.Runs*l.Pieces {
			t.Errorf("%+v: %+v does not cover a run once", g, l)
		}
		if l.Pieces > 1 && g.RunLen/l.Pieces < partMin || l.Pieces > 1 && g.Count*l.Parts > 2*partBlocks {
			t.Errorf("%+v: %+v split too far", g, l)
		}
		if l.Vec == 4 && (g.RunLen%4 != 0 || g.RunStride%4 != 0 || g.Outer%4 != 0) {
			t.Errorf("%+v: float4 loads of runs not at multiples of 4", g)
		}
	}
}

// TestPointLayoutsCoverElements: a pointwise or normalise kernel's blocks
// cover its elements, and a normalise block's shared arrays hold every
// segment its elements reach.
func TestPointLayoutsCoverElements(t *testing.T) {
	for _, n := range []int{1, 3, 1000, 1024, 4097, 62995968, 1750} {
		for _, div := range []int{1, 7, 123039, 4096} {
			norm := PointOp{Seg: Segments{Div: div}}
			l := pointLayout(n, div, &norm)
			blocks := (n + l.PerBlock - 1) / l.PerBlock
			if l.PerBlock != passThreads*l.Vec*l.Iters || n%l.Vec != 0 || l.Ragged != (n%l.PerBlock != 0) {
				t.Errorf("%d elements: %+v", n, l)
			}
			for b := range blocks {
				lo, hi := b*l.PerBlock, min(n, (b+1)*l.PerBlock)
				if segs := (hi-1)/div - lo/div + 1; segs > l.Segs {
					t.Errorf("%d elements, segments of %d: block %d reaches %d segments, the arrays hold %d", n, div, b, segs, l.Segs)
				}
			}
		}
	}
	if l := pointLayout(1000, 60, nil); l.Vec != 4 || l.Iters != 1 || !l.VecChannel {
		t.Errorf("pointwise layout %+v", l)
	}
	if l := pointLayout(6, 3, nil); l.Vec != 1 || l.VecChannel != true || !l.Ragged {
		t.Errorf("6 elements: %+v", l)
	}
}
