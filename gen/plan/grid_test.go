package plan_test

import (
	"strings"
	"testing"

	"convtgen/gen/plan"
)

// families are the kernel forms a plan can take, as a config's precision
// and tile.
var families = []struct{ name, precision, tile string }{
	{"ffma", "fp32", ""},
	{"mma", "3xtf32", ""},
	{"direct", "fp32", "{direct: true}"},
	{"wgmma", "3xtf32", "{wgmma: true}"},
}

// TestGridFold: groups 65536, or 2^24 output channels in one group, gave
// a grid with y or z past CUDA's 65535 (a launch that runs nothing). The
// plan folds such a grid into x, within x's 2^31-1, keeping every
// logical block; a grid that fits is launched as it is.
func TestGridFold(t *testing.T) {
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		name string
		conf config
		fold bool
	}{
		{"groups 65536", config{batch: 1, cin: 65536, cout: 65536, groups: 65536, k: one, in: [3]int{1, 1, 2}, s: one, d: one}, true},
		{"out channels 2^24", config{batch: 1, cin: 1, cout: 1 << 24, groups: 1, k: one, in: one, s: one, d: one}, true},
		{"groups 65535", config{batch: 1, cin: 65535, cout: 65535, groups: 65535, k: one, in: [3]int{1, 1, 2}, s: one, d: one}, false},
	} {
		for _, f := range families {
			conf := c.conf
			conf.precision, conf.tile = f.precision, f.tile
			p, err := plan.New(conf.parse(t), plan.SM90)
			if err != nil {
				t.Errorf("%s, %s: %v", c.name, f.name, err)
				continue
			}
			g, b := p.Grid, p.Blocks
			if g[0] < 1 || g[0] > plan.MaxGridX || g[1] < 1 || g[1] > plan.MaxGridYZ || g[2] < 1 || g[2] > plan.MaxGridYZ {
				t.Errorf("%s, %s: grid %v past CUDA's limits", c.name, f.name, g)
			}
			if p.Fold != c.fold {
				t.Errorf("%s, %s: fold %v, want %v (blocks %v)", c.name, f.name, p.Fold, c.fold, b)
			}
			if b[2] != conf.groups {
				t.Errorf("%s, %s: logical grid %v, want z = groups %d", c.name, f.name, b, conf.groups)
			}
			if !p.Fold {
				if g != b {
					t.Errorf("%s, %s: unfolded grid %v is not the logical %v", c.name, f.name, g, b)
				}
				continue
			}
			if g[0] != b[0]*b[1]*b[2] || g[1] != 1 || g[2] != 1 {
				t.Errorf("%s, %s: folded grid %v does not hold the %v blocks", c.name, f.name, g, b)
			}
			// The kernels' decode (templates/cuda.py.tmpl, block_index)
			// maps the launch's first and last blocks to the logical
			// grid's corners.
			decode := func(x int) [3]int { return [3]int{x % b[0], x / b[0] % b[1], x / (b[0] * b[1])} }
			if decode(0) != [3]int{} || decode(g[0]-1) != [3]int{b[0] - 1, b[1] - 1, b[2] - 1} {
				t.Errorf("%s, %s: decode of the folded grid %v misses the corners of %v", c.name, f.name, g, b)
			}
		}
	}
}

// TestIndexWidth: every plan with a tensor of 2^31 elements or more
// computes offsets in 64 bits, and only those, on both reproducers of
// the issue (a 17 GB output; a 10 GB input) and configurations either
// side of the bound, in every family.
func TestIndexWidth(t *testing.T) {
	one := [3]int{1, 1, 1}
	for _, c := range []config{
		{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{1, 32768, 32768}, s: [3]int{1, 1, 4}, d: one},
		{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{1, 50000, 50000}, p: [3]int{0, 0, 24000}, s: one, d: one},
		{batch: 1, cin: 1, cout: 2, groups: 1, k: one, in: [3]int{1, 32768, 32768}, s: one, d: one},
		{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{2, 32768, 32767}, s: one, d: one},
		{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{1, 32768, 32767}, s: one, d: one},
		{batch: 2, cin: 4, cout: 4, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{64, 1024, 1024}, s: [3]int{2, 2, 2}, d: one},
		{batch: 2, cin: 4, cout: 4, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{8, 64, 64}, s: [3]int{2, 2, 2}, d: one},
		{batch: 1, cin: 1, cout: 65536, groups: 1, k: one, in: [3]int{1, 256, 256}, s: one, d: one},
	} {
		for _, f := range families {
			conf := c
			conf.precision, conf.tile = f.precision, f.tile
			p, err := plan.New(conf.parse(t), plan.SM90)
			if err != nil {
				t.Errorf("%+v: %v", conf, err)
				continue
			}
			lens := []int{p.Conv.InputLen(), p.Conv.OutputLen(), p.Conv.WeightLen(), p.RepackLen(), p.WGMMA.XLen}
			big := false
			for _, n := range lens {
				big = big || n >= 1<<31
			}
			if want := map[bool]string{true: "long long", false: "int"}[big]; p.Index != want {
				t.Errorf("%s %v: tensors of %v elements, index %q, want %q", f.name, conf.in, lens, p.Index, want)
			}
		}
	}
}

// TestIntLimitsRefused: a stride phase whose rows pass int is refused with
// the field and the limit, not planned into kernels whose int arithmetic
// would wrap (extents past int never reach the plan: the spec's limits
// refuse them).
func TestIntLimitsRefused(t *testing.T) {
	one := [3]int{1, 1, 1}
	for _, c := range []struct {
		conf config
		want string
	}{
		{config{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{2, 32768, 32767}, s: one, d: one}, ""},
		{config{batch: 1, cin: 1, cout: 1, groups: 1, k: one, in: [3]int{2, 32768, 32768}, s: one, d: one}, "problem.input: gives a stride phase"},
	} {
		for _, f := range families {
			conf := c.conf
			conf.precision, conf.tile = f.precision, f.tile
			_, err := plan.New(conf.parse(t), plan.SM90)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("%s %v: %v", f.name, conf.in, err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("%s %v: error %v, want %q", f.name, conf.in, err, c.want)
			}
		}
	}
}
