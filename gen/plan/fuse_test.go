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
// and reads no tensor; the passes after it are the rest, renamed from 0.
func TestLeadingPointwiseOpsFuse(t *testing.T) {
	fused := map[string][]string{
		"l2_100_clamp_min_divide":                {"clamp", "div"},
		"l2_38_avgpool_clamp_softmax_multiply":   {"clamp"},
		"l2_60_swish_groupnorm_hardswish":        {"swish"},
		"l2_61_relu_groupnorm":                   {"relu"},
		"l2_77_scale_batchnorm_globalavgpool":    {"mul"},
		"l2_96_multiply_max_globalavgpool_clamp": {"mul"},
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
			if !slices.Equal(kinds, fused[s.Name]) || ch.Fused != (len(kinds) > 0) || !ch.Any() {
				t.Errorf("%s for %s: fused %v (chain says %t), want %v", s.Name, target.Name, kinds, ch.Fused, fused[s.Name])
			}
			whole, err := layChain(s, p.Out)
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
		if fused[s.Name] != nil {
			seen++
		}
	}
	if seen != len(fused) {
		t.Errorf("%d of the %d fused problems planned", seen, len(fused))
	}
}
