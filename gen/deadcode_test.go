package gen

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"testing"

	"convtgen/gen/deadcode"
	"convtgen/gen/plan"
)

// deadCodeRandom: random configurations checked beside the specs', each
// planned for every target, enough that every family and option below
// comes up.
const deadCodeRandom = 300

// forms are the kernel forms a plan's CUDA file takes, the ones
// TestNoDeadCode must see at least once each (so that no template
// branch goes unchecked).
func forms(p *plan.Plan) []string {
	t := p.Tile
	var f []string
	switch {
	case t.FFMA != nil:
		f = append(f, "ffma")
		if t.FFMA.CpAsync {
			f = append(f, "ffma cp_async")
		}
	case t.MMA != nil:
		f = append(f, "mma")
		if t.MMA.Presplit {
			f = append(f, "mma presplit")
		}
		if t.MMA.CpAsync {
			f = append(f, "mma cp_async")
		}
	case t.Direct != nil:
		f = append(f, "direct")
		if t.TW() > 0 {
			f = append(f, "direct window")
		}
	case t.WGMMA != nil:
		b := newWGMMABlocks(p)
		tg := p.Target.Name
		f = append(f, "wgmma "+tg)
		for _, o := range []struct {
			on   bool
			name string
		}{{t.WGMMA.Winograd, "winograd"}, {t.WGMMA.KWInN, "kw_in_n"}, {b.StageA, "staged input"}, {b.Park, "parked sums"},
			{b.OneSpan, "one span"}, {!b.OneSpan && !b.Park, "running sums"}, {b.Bulk, "bulk copies"}, {b.EarlyA, "early inputs"},
			{p.Names.Fill != "", "fill"}, {t.WGMMA.Winograd && b.Park, "winograd parked"}} {
			if o.on {
				f = append(f, "wgmma "+tg+" "+o.name)
			}
		}
	}
	if p.Epilogue.Bias {
		f = append(f, "bias")
	}
	return f
}

// TestNoDeadCode runs the dead-code analyser on every CUDA file the specs
// render (all of out/, rendered here) and on random configurations of
// every family for both targets: no conditional directive, constexpr
// bool, if constexpr, constant-only branch or uncalled function in any.
// Level-1 files are also held under 600 lines.
func TestNoDeadCode(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	random, err := Random(deadCodeRandom, 5)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range random {
		// Random plans one target a draw; plan the others too where they
		// accept the draw.
		s := l.Spec()
		for _, tg := range plan.Targets {
			if tg.Name == l.Plans[0].Target.Name {
				continue
			}
			if p, err := plan.New(s, tg); err == nil {
				l.Plans = append(l.Plans, p)
			}
		}
		specs = append(specs, l)
	}
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	files := 0
	for _, l := range specs {
		for _, p := range l.Plans {
			if !slices.Contains(p.Spec.Kernel.Backends, "cuda") {
				continue
			}
			fs, err := r.Render([]*plan.Plan{p}, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fs {
				if !strings.HasPrefix(f.Path[strings.LastIndex(f.Path, "/")+1:], "cuda.") {
					continue
				}
				files++
				src, err := deadcode.Sources(string(f.Data))
				if err != nil {
					t.Fatalf("%s: %v", f.Path, err)
				}
				found, err := deadcode.Check(src)
				if err != nil {
					t.Fatalf("%s: %v", f.Path, err)
				}
				for _, d := range found {
					t.Errorf("%s (from %s):%s", f.Path, l.Path, d)
				}
				if lines := bytes.Count(f.Data, []byte("\n")); strings.HasPrefix(l.Path, SpecDir+"/level1/") && lines >= 600 {
					t.Errorf("%s: %d lines; a level-1 CUDA file stays under 600", f.Path, lines)
				}
				for _, k := range forms(p) {
					seen[k]++
				}
			}
		}
	}
	var want []string
	for _, tg := range plan.Targets {
		for _, o := range []string{"", " winograd", " kw_in_n", " staged input", " parked sums", " one span", " running sums", " fill", " winograd parked"} {
			want = append(want, "wgmma "+tg.Name+o)
		}
	}
	want = append(want, "wgmma sm90 bulk copies", "wgmma sm90 early inputs", "ffma", "ffma cp_async", "mma", "mma presplit",
		"mma cp_async", "direct", "direct window", "bias")
	var missing []string
	for _, k := range want {
		if seen[k] == 0 {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("no file checked of the forms %s (of %d files)", strings.Join(missing, ", "), files)
	}
}
