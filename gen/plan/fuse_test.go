package plan

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"convtgen/gen/spec"
)

// TestLeadingPointwiseOpsFuse plans every level-2 problem: the first
// pass moves into the store (Epilogue.Ops) exactly when it is pointwise
// and needs no statistics, with the tensors its ops read (Epilogue.Extras:
// per channel, 0-dim, per element) and nothing else; the passes after it
// are the rest, renamed from 0.
func TestLeadingPointwiseOpsFuse(t *testing.T) {
	type fusion struct {
		ops    []string
		extras []string // "expr read"
	}
	fused := map[string]fusion{
		"l2_100_clamp_min_divide":                    {[]string{"clamp", "div"}, nil},
		"l2_13_mean_add_softmax_tanh_scaling":        {[]string{"add"}, []string{"self.bias channel"}}, // the depth mean runs before the convolution
		"l2_20_sum_residualadd_multiply_residualadd": {[]string{"add", "add", "mul", "add"}, []string{"self.bias channel"}},
		"l2_26_add_hardswish":                        {[]string{"add", "mul_hardswish"}, []string{"add_input element"}},
		"l2_38_avgpool_clamp_softmax_multiply":       {[]string{"clamp"}, nil},
		"l2_3_sum_layernorm_avgpool_gelu":            {[]string{"add"}, []string{"self.sum_weight scalar"}},
		"l2_50_scaling_avgpool_biasadd_scaling":      {[]string{"mul"}, []string{"self.scale1 scalar"}},
		"l2_60_swish_groupnorm_hardswish":            {[]string{"swish"}, nil},
		"l2_61_relu_groupnorm":                       {[]string{"relu"}, nil},
		"l2_74_leakyrelu_multiply_leakyrelu_max":     {[]string{"leaky_relu", "mul", "leaky_relu"}, []string{"self.multiplier channel"}},
		"l2_77_scale_batchnorm_globalavgpool":        {[]string{"mul"}, nil},
		"l2_96_multiply_max_globalavgpool_clamp":     {[]string{"mul"}, nil},
	}
	paths, err := filepath.Glob(filepath.Join("..", "..", "specs", "level2", "*.yaml"))
	if err != nil || len(paths) != 19 {
		t.Fatalf("%d level-2 specs: %v", len(paths), err)
	}
	seen := 0
	for _, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range []Target{SM80, SM90} {
			p, err := New(s, target)
			if err != nil {
				t.Fatalf("%s for %s: %v", s.Name, target.Name, err)
			}
			ch := p.Epilogue.Chain
			var kinds []string
			for _, op := range p.Epilogue.Ops {
				kinds = append(kinds, op.Kind)
			}
			want := fused[s.Name]
			if !slices.Equal(kinds, want.ops) || ch.Fused != (len(kinds) > 0) || !ch.Any() {
				t.Errorf("%s for %s: fused %v (chain says %t), want %v", s.Name, target.Name, kinds, ch.Fused, want.ops)
			}
			var extras []string
			var lens [MaxStoreExtras]int
			for i, e := range p.Epilogue.Extras {
				extras = append(extras, ch.Extras[e.Arg].Expr+" "+e.Read)
				lens[i] = ch.Extras[e.Arg].Len
			}
			if !slices.Equal(extras, want.extras) {
				t.Errorf("%s for %s: the store reads %v, want %v", s.Name, target.Name, extras, want.extras)
			}
			if l := p.Launch(""); l.StoreExtras != lens {
				t.Errorf("%s for %s: the launch record's store extras are %v, want %v", s.Name, target.Name, l.StoreExtras, lens)
			}
			whole, err := layChain(s, p.Out, p.DepthFold)
			if err != nil {
				t.Fatal(err)
			}
			gone := 0
			if ch.Fused {
				gone = 1
			}
			if len(whole.Passes) != len(ch.Passes)+gone {
				t.Errorf("%s: %d passes laid, %d left, %d fused", s.Name, len(whole.Passes), len(ch.Passes), gone)
			}
			for i, q := range ch.Passes {
				if want := fmt.Sprintf("%s_epi%d", p.Names.Kernel, i); q.Name != want {
					t.Errorf("%s: pass %d named %s, want %s", s.Name, i, q.Name, want)
				}
			}
		}
		if fused[s.Name].ops != nil {
			seen++
		}
	}
	if seen != len(fused) {
		t.Errorf("%d of the %d fused problems planned", seen, len(fused))
	}
}

// TestFuseReadsTensors: the leading pass fuses with the tensors its ops
// read, each once and in extras order, however many ops read them; a
// norm keeps the pass (its statistics come from a pass before it), and
// so does a pass reading more than MaxStoreExtras tensors.
func TestFuseReadsTensors(t *testing.T) {
	read := func(kind string, arg int, how string) PointOp {
		return PointOp{Kind: kind, Arg: arg, PerChannel: how == StoreChannel, Elementwise: how == StoreElement, Weight: -1, Bias: -1}
	}
	num := PointOp{Kind: "mul", Arg: -1, Num: 2, Weight: -1, Bias: -1}
	norm := PointOp{Kind: "norm", Arg: -1, Weight: 3, Bias: 4}
	for _, c := range []struct {
		name string
		ops  []PointOp
		want []StoreExtra // nil: not fused
	}{
		{"numbers only", []PointOp{num, {Kind: "relu", Arg: -1}}, []StoreExtra{}},
		{"three kinds, one read twice", []PointOp{read("add", 2, StoreElement), num, read("mul", 0, StoreChannel), read("sub", 2, StoreElement), read("div", 1, StoreScalar)},
			[]StoreExtra{{0, StoreChannel}, {1, StoreScalar}, {2, StoreElement}}},
		{"four tensors", []PointOp{read("add", 0, StoreChannel), read("add", 1, StoreChannel), read("add", 2, StoreScalar), read("add", 3, StoreElement)},
			[]StoreExtra{{0, StoreChannel}, {1, StoreChannel}, {2, StoreScalar}, {3, StoreElement}}},
		{"five tensors", []PointOp{read("add", 0, StoreChannel), read("add", 1, StoreChannel), read("add", 2, StoreScalar), read("add", 3, StoreElement), read("mul", 4, StoreChannel)}, nil},
		{"a norm", []PointOp{read("add", 0, StoreChannel), norm}, nil},
	} {
		ch := &Chain{Passes: []Pass{{Kind: "pointwise", Ops: c.ops}, {Kind: "pool"}}}
		ops, extras := ch.fuse()
		if c.want == nil {
			if ops != nil || extras != nil || ch.Fused || len(ch.Passes) != 2 {
				t.Errorf("%s: fused %d ops reading %v (chain fused %t, %d passes left), want the pass kept", c.name, len(ops), extras, ch.Fused, len(ch.Passes))
			}
			continue
		}
		if len(ops) != len(c.ops) || !slices.Equal(extras, c.want) || !ch.Fused || len(ch.Passes) != 1 {
			t.Errorf("%s: fused %d ops reading %v (chain fused %t, %d passes left), want %d reading %v", c.name, len(ops), extras, ch.Fused, len(ch.Passes), len(c.ops), c.want)
		}
	}
	// A first pass that is not pointwise fuses nothing.
	ch := &Chain{Passes: []Pass{{Kind: "stats"}, {Kind: "pointwise", Ops: []PointOp{num}}}}
	if ops, _ := ch.fuse(); ops != nil || ch.Fused {
		t.Errorf("a stats pass first: fused %d ops", len(ops))
	}
}
