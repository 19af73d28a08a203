package gen

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"convtgen/gen/choose"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// tuneRoot is the repository root seen from this package's folder.
const tuneRoot = ".."

// The two committed specs the tuning tests copy: 58's own choice is the
// fp32 default tile, 73's own choice is 3xtf32 with bm 128 and wm 32, so
// each has one duplicate candidate to skip.
const (
	tuneSpec58 = "specs/level1/58_asymmetric_input_asymmetric_kernel.yaml"
	tuneSpec73 = "specs/level1/73_strided_padded_grouped.yaml"
)

func tuneLoad(t *testing.T, root string) map[string]Loaded {
	t.Helper()
	specs, err := LoadAll(root)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]Loaded{}
	for _, l := range specs {
		m[l.Path] = l
	}
	return m
}

// tunePlan parses a spec file's bytes and plans it.
func tunePlan(t *testing.T, name string, data []byte) *plan.Plan {
	t.Helper()
	s, err := spec.Parse(name, data)
	if err != nil {
		t.Fatalf("%s does not parse: %v\n%s", name, err, data)
	}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		t.Fatalf("%s does not plan: %v\n%s", name, err, data)
	}
	return p
}

// checkCandidates checks the invariants of one spec's candidate list.
func checkCandidates(t *testing.T, l Loaded, p *plan.Plan, cs []Candidate) {
	t.Helper()
	own := p.Spec
	if len(cs) == 0 {
		t.Fatalf("%s: no candidates", l.Path)
	}
	first := cs[0]
	want := Candidate{Current: true, Backend: "cuda", Target: p.Target.Name, Variant: own.Name, Spec: own.Name, SpecPath: l.Path,
		Precision: own.Kernel.PrecisionFor("cuda"), CUDA: p.Tile.Choice()}
	if first != want {
		t.Errorf("%s: first candidate %+v, want the spec's own choice %+v", l.Path, first, want)
	}
	type choice struct {
		precision string
		tile      spec.CUDA
	}
	seen := map[choice]string{}
	labelBefore := 0
	for i, c := range cs {
		// Labels count the candidate list, skipped choices too: rising.
		label, _ := strconv.Atoi(strings.TrimPrefix(c.Variant, own.Name+"_"+p.Target.Name+"_t"))
		if i > 0 && (c.Current || !strings.HasPrefix(c.Variant, own.Name+"_"+p.Target.Name+"_t") || label < i || i > 1 && label <= labelBefore ||
			c.Spec != own.Name || c.SpecPath != l.Path) {
			t.Errorf("%s: candidate %d = %+v", l.Path, i, c)
		}
		if c.Precision != "fp32" && c.Precision != "3xtf32" {
			t.Errorf("%s: %s precision %q", l.Path, c.Variant, c.Precision)
		}
		k := choice{c.Precision, c.CUDA}
		if other, dup := seen[k]; dup {
			t.Errorf("%s: %s repeats %s's choice %+v", l.Path, c.Variant, other, k)
		}
		seen[k] = c.Variant
		labelBefore = label
		// Feasible, and fully resolved: planning the choice as written
		// gives the same family and options, in the family's precision.
		s := *own
		s.Kernel = spec.Kernel{Backends: []string{"cuda"}, CUDA: c.CUDA}
		q, err := plan.New(&s, p.Target)
		if err != nil {
			t.Errorf("%s: %s is infeasible: %v", l.Path, c.Variant, err)
			continue
		}
		if got := q.Tile.Choice(); got != c.CUDA {
			t.Errorf("%s: %s plans to %s, not its choice %s", l.Path, c.Variant, got, c.CUDA)
		}
		if tc := q.Tile.MMA != nil || q.Tile.WGMMA != nil; tc != (c.Precision == "3xtf32") || c.CUDA.Of().Precision() != c.Precision {
			t.Errorf("%s: %s precision %s, choice %s", l.Path, c.Variant, c.Precision, c.CUDA)
		}
	}
}

func TestTuneCandidatesCommitted(t *testing.T) {
	specs := tuneLoad(t, tuneRoot)
	for _, l := range specs {
		checkCandidates(t, l, sm90(l), cudaCands(l))
	}

	// 58's own choice is the one-slab wgmma candidate: skipped.
	c58 := cudaCands(specs[tuneSpec58])
	if most := len(choose.CUDAKernels()) + 1 + len(choose.WindowKernels(1, 64)) + len(choose.WGMMAKernels()) + len(choose.BulkTwins(choose.WGMMAKernels())); len(c58) > most {
		t.Errorf("58: %d candidates, want at most %d (its own choice is one of them, its cp.async variant one more, then the W-window and wgmma kernels and their bulk-weight twins)", len(c58), most)
	}
	for _, c := range c58[1:] {
		if c.CUDA == c58[0].CUDA {
			t.Errorf("58: %s repeats its own choice %s", c.Variant, c.CUDA)
		}
	}
	// 73's own choice is W taps as columns, one slab, one sum a phase,
	// two stages, four blocks an SM, weights by bulk copies; its cp.async
	// variant (t15) would not fit four blocks' shared memory, skipped;
	// the labels after it stay put. The same tile with cp.async weights
	// is t36, so the last candidate (the own tile's weights the other
	// way, t49) repeats it and is skipped.
	c73 := cudaCands(specs[tuneSpec73])
	var got []string
	for _, c := range c73 {
		got = append(got, c.Variant+" "+c.Precision+" "+c.CUDA.String())
	}
	want := []string{
		"l1_73_strided_padded_grouped 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 16, stages: 2, kw_in_n: true, bulk_weights: true}}",
		"l1_73_strided_padded_grouped_sm90_t1 fp32 {ffma: {bm: 256, bn: 32, bk: 8, tm: 8, tn: 4, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t2 3xtf32 {mma: {bm: 256, bn: 32, bk: 16, wm: 64, wn: 32, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t3 3xtf32 {mma: {bm: 128, bn: 32, bk: 16, wm: 32, wn: 32, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t4 3xtf32 {mma: {bm: 128, bn: 32, bk: 32, wm: 32, wn: 32, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t5 3xtf32 {mma: {bm: 128, bn: 32, bk: 16, wm: 32, wn: 32, min_blocks: 1, presplit: true}}",
		"l1_73_strided_padded_grouped_sm90_t7 3xtf32 {mma: {bm: 256, bn: 32, bk: 16, wm: 64, wn: 32, min_blocks: 1, cp_async: true}}",
		// Direct: two rows per thread with 16 channels; eight rows (128
		// accumulators) do not fit, so t10 is skipped.
		"l1_73_strided_padded_grouped_sm90_t8 fp32 {direct: {bm: 256, bn: 16, bk: 8, tm: 2, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t11 fp32 {direct: {bm: 256, bn: 16, bk: 8, tm: 1, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t12 fp32 {direct: {bm: 256, bn: 16, bk: 4, tm: 2, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t13 fp32 {direct: {bm: 512, bn: 16, bk: 8, tm: 2, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t14 fp32 {direct: {bm: 512, bn: 16, bk: 4, tm: 4, min_blocks: 1}}",
		// W-window direct kernels, tw a multiple of the stride (2).
		"l1_73_strided_padded_grouped_sm90_t16 fp32 {direct: {bm: 128, bn: 8, bk: 2, tw: 8, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t17 fp32 {direct: {bm: 256, bn: 8, bk: 2, tw: 8, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t18 fp32 {direct: {bm: 64, bn: 8, bk: 2, tw: 8, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t19 fp32 {direct: {bm: 128, bn: 8, bk: 1, tw: 8, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t20 fp32 {direct: {bm: 256, bn: 8, bk: 8, tw: 8, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t21 fp32 {direct: {bm: 128, bn: 16, bk: 2, tw: 4, min_blocks: 1}}",
		"l1_73_strided_padded_grouped_sm90_t22 fp32 {direct: {bm: 128, bn: 4, bk: 2, tw: 16, min_blocks: 1}}",
		// wgmma: the default, one slab, spans of 2 and 8, W taps as
		// columns with two slabs and one, the input staged by cp.async.
		"l1_73_strided_padded_grouped_sm90_t23 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 4, stages: 4}}",
		"l1_73_strided_padded_grouped_sm90_t24 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, span: 4, stages: 4}}",
		"l1_73_strided_padded_grouped_sm90_t25 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 2, stages: 4}}",
		"l1_73_strided_padded_grouped_sm90_t26 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 8, stages: 4}}",
		"l1_73_strided_padded_grouped_sm90_t27 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 4, stages: 4, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t28 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, span: 4, stages: 4, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t29 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 4, stages: 4, cp_async: true}}",
		"l1_73_strided_padded_grouped_sm90_t30 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, span: 4, stages: 4, cp_async: true}}",
		"l1_73_strided_padded_grouped_sm90_t31 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 4, stages: 3, cp_async: true, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t32 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, span: 4, stages: 3, cp_async: true, kw_in_n: true}}",
		// Sums of 16 steps, set stages and blocks per SM, parked sums.
		"l1_73_strided_padded_grouped_sm90_t33 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 4, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t34 3xtf32 {wgmma: {min_blocks: 1, slabs: 2, span: 16, stages: 5, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t35 3xtf32 {wgmma: {min_blocks: 3, slabs: 2, span: 16, stages: 4, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t36 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 16, stages: 2, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t37 3xtf32 {wgmma: {min_blocks: 3, slabs: 2, span: 8, stages: 3, kw_in_n: true, park_sums: true}}",
		"l1_73_strided_padded_grouped_sm90_t38 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 4, stages: 2, park_sums: true}}",
		"l1_73_strided_padded_grouped_sm90_t39 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 8, stages: 2, park_sums: true}}",
		"l1_73_strided_padded_grouped_sm90_t40 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 4, stages: 3}}",
		"l1_73_strided_padded_grouped_sm90_t41 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 8, stages: 3, park_sums: true}}",
		// Two warpgroups a block sharing the weight stages, and four (t43,
		// t46): sm90 builds sm_90a alone, where four fit.
		"l1_73_strided_padded_grouped_sm90_t42 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 16, stages: 2, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t43 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, warpgroups: 4, span: 16, stages: 2, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t44 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 16, stages: 3, kw_in_n: true}}",
		"l1_73_strided_padded_grouped_sm90_t45 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 4, stages: 3}}",
		"l1_73_strided_padded_grouped_sm90_t46 3xtf32 {wgmma: {min_blocks: 1, slabs: 1, warpgroups: 4, span: 4, stages: 3}}",
		"l1_73_strided_padded_grouped_sm90_t47 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 4, stages: 4}}",
		"l1_73_strided_padded_grouped_sm90_t48 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 16, stages: 3}}",
		// Parked sums of 12 and 16 steps, four blocks an SM.
		"l1_73_strided_padded_grouped_sm90_t49 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 12, stages: 2, park_sums: true}}",
		"l1_73_strided_padded_grouped_sm90_t50 3xtf32 {wgmma: {min_blocks: 4, slabs: 1, span: 16, stages: 2, park_sums: true}}",
		// The same sums in blocks of two warpgroups.
		"l1_73_strided_padded_grouped_sm90_t51 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 16, stages: 3, park_sums: true}}",
		"l1_73_strided_padded_grouped_sm90_t52 3xtf32 {wgmma: {min_blocks: 2, slabs: 1, warpgroups: 2, span: 16, stages: 4, park_sums: true}}",
	}
	if len(got) < len(want) || !reflect.DeepEqual(got[:len(want)], want) {
		t.Errorf("73 candidates:\n%s\nwant first\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	} else {
		// Then the wgmma kernels' bulk-weight twins (sm90), labelled after
		// the space: the chooser weighs them, so tuning times them. Each is
		// a wgmma candidate listed before, with bulk weight copies.
		listed := map[string]bool{}
		for _, c := range c73[:len(want)] {
			listed[c.CUDA.String()] = true
		}
		// Last, the own tile with its phases shared among 1, 2 and 4
		// blocks (its 4 (d, h) phases with taps: 8 is refused; 1 is
		// another tile than the own, whose split the plan chose), and
		// before them the tiles that split their reduction (split_k).
		rest := c73[len(want):]
		var splits []string
		for len(rest) > 0 {
			w, ok := rest[len(rest)-1].CUDA.Family.(spec.WGMMA)
			if !ok || w.PhaseSplit == 0 && rest[len(rest)-1].CUDA != c73[0].CUDA {
				break
			}
			splits = append(splits, rest[len(rest)-1].CUDA.String())
			rest = rest[:len(rest)-1]
		}
		own := c73[0].CUDA.Family.(spec.WGMMA)
		var wantSplits []string
		for _, n := range []int{4, 2, 1} {
			if n == own.PhaseSplit || n == 1 && own.PhaseSplit == 0 {
				continue
			}
			w := own
			w.PhaseSplit = n
			wantSplits = append(wantSplits, spec.CUDA{Family: w}.String())
		}
		if !reflect.DeepEqual(splits, wantSplits) {
			t.Errorf("73: phase-split candidates (last first) %v, want %v", splits, wantSplits)
		}
		for len(rest) > 0 && spec.SplitK(rest[len(rest)-1].CUDA.Family) > 1 {
			rest = rest[:len(rest)-1]
		}
		if len(rest) == len(c73)-len(want) {
			t.Error("73: no split_k candidates listed")
		}
		for _, c := range rest {
			w, ok := c.CUDA.Family.(spec.WGMMA)
			if n, _ := strconv.Atoi(strings.TrimPrefix(c.Label(), "t")); !ok || !w.BulkWeights || n <= 52 {
				t.Errorf("73: %s %s after the space is not a bulk-weight twin", c.Variant, c.CUDA)
				continue
			}
			w.BulkWeights = false
			if !listed[spec.CUDA{Family: w}.String()] {
				t.Errorf("73: %s is the twin of no wgmma candidate listed", c.Variant)
			}
		}
		if len(rest) == 0 {
			t.Error("73: no bulk-weight twins listed")
		}
	}

	// sm80 has candidates of its own, planned for the A100: named for it,
	// its own choice (sm80's section: no bulk copies) first, and no four
	// warpgroups a block, whose mma.sync code would have too few registers.
	l73 := specs[tuneSpec73]
	p80 := l73.Plan(plan.SM80)
	c80 := cudaCandidates(l73.Path, p80)
	checkCandidates(t, l73, p80, c80)
	if own := c80[0].CUDA.String(); own != "{wgmma: {min_blocks: 4, slabs: 1, span: 16, stages: 2, kw_in_n: true}}" {
		t.Errorf("73's own sm80 choice %s", own)
	}
	for _, c := range c80 {
		if c.Target != "sm80" || c.Label() == "t43" || c.Label() == "t46" {
			t.Errorf("sm80 candidate %s (target %s) %s", c.Variant, c.Target, c.CUDA)
		}
	}
	// Candidates lists both targets', each target's in a block.
	all := Candidates(l73)
	var targets []string
	for _, c := range all {
		if len(targets) == 0 || targets[len(targets)-1] != c.Target {
			targets = append(targets, c.Target)
		}
	}
	if !reflect.DeepEqual(targets, []string{"sm80", "sm90"}) || len(all) != len(c80)+len(c73)+len(TritonCandidates(l73.Path, p80))+len(tritonCands(l73)) {
		t.Errorf("73: %d candidates of targets %v", len(all), targets)
	}
}

// TestTuneCandidatesRandom checks the candidate invariants on random
// configurations (their own choices include explicit random tiles). None
// of the fixed candidate kernels is infeasible for any of them: the
// "infeasible" branch of Candidates is defensive.
func TestTuneCandidatesRandom(t *testing.T) {
	specs, err := Random(300, 17)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range specs {
		p := l.Plans[0] // a random target
		cs := cudaCandidates(l.Path, p)
		if len(cs) < 2 || len(cs) > 2+len(choose.CUDAKernels())+len(choose.WindowKernels(1, 64))+len(choose.WGMMAKernels())+len(choose.BulkTwins(choose.WGMMAKernels()))+len(choose.SplitKernels()) {
			t.Errorf("%s: %d candidates", p.Spec.Name, len(cs))
		}
		checkCandidates(t, l, p, cs)
	}
}

// Candidates of the fixture results (testdata/tune): each spec's own
// choice first, then its variants, as a manifest lists them.
func tuneFixtureCandidates() []Candidate {
	var cs []Candidate
	add := func(name string, variants int) {
		cs = append(cs, Candidate{Current: true, Backend: "cuda", Target: "sm90", Variant: name, Spec: name, SpecPath: "specs/" + name + ".yaml",
			Precision: "fp32", CUDA: spec.CUDA{Family: spec.FFMA{BM: 256, BN: 32, BK: 8, TM: 8, TN: 4}}})
		for i := 1; i <= variants; i++ {
			cs = append(cs, Candidate{Backend: "cuda", Target: "sm90", Variant: fmt.Sprintf("%s_sm90_t%d", name, i), Spec: name, SpecPath: "specs/" + name + ".yaml",
				Precision: "3xtf32", CUDA: spec.CUDA{Family: spec.MMA{BM: 128 << (i % 2), BN: 32, BK: 16, WM: 32, WN: 32}}})
		}
	}
	add("sa", 7) // picks sa_sm90_t4 of many unusable ones
	add("sb", 1) // t1 2% faster: the current choice stays
	add("sc", 2) // t1 4% faster: replaces it
	add("sd", 1) // current never timed
	add("se", 1) // current incorrect
	add("sf", 1) // current passed without an error figure
	add("sg", 1) // only the current choice usable
	add("sh", 1) // nothing usable
	return cs
}

// tuneReadRuns decodes result documents the way convtgen apply-tune does.
func tuneReadRuns(t *testing.T, names ...string) []HarnessResults {
	t.Helper()
	var runs []HarnessResults
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join("testdata", "tune", name))
		if err != nil {
			t.Fatal(err)
		}
		var r HarnessResults
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		runs = append(runs, r)
	}
	return runs
}

func winnersBySpec(t *testing.T, ws []Winner) map[string]Winner {
	t.Helper()
	if !sort.SliceIsSorted(ws, func(i, j int) bool { return ws[i].Spec < ws[j].Spec }) {
		t.Errorf("winners not sorted by spec: %+v", ws)
	}
	m := map[string]Winner{}
	for _, w := range ws {
		if _, dup := m[w.Spec]; dup {
			t.Errorf("two winners for %s", w.Spec)
		}
		m[w.Spec] = w
	}
	return m
}

// TestTunePickWinners: the harness's run over out/ times the current
// choices ("results", max_rel_l2), the kernel verifier's run times the
// candidates ("items", rel_l2).
func TestTunePickWinners(t *testing.T) {
	cands := tuneFixtureCandidates()
	runs := tuneReadRuns(t, "e2e.json", "kernels.json")
	if len(runs[0].Results) == 0 || len(runs[1].Items) == 0 || runs[0].GPU != "Tune GPU T1" || runs[0].Date != "2031-02-03T04:05:06Z" {
		t.Fatalf("fixtures decode to %+v", runs)
	}
	ws := winnersBySpec(t, PickWinners(cands, runs...))
	for _, c := range []struct {
		spec, variant string
		ms            float64
		tried         int
	}{
		// sa: t1 incorrect, t2 (rel_l2) and t6 (max_rel_l2) over 5e-6, t3
		// without an error figure, t7 untimed, t5's faster triton time not
		// cuda; t4 at exactly 5e-6 is the fastest usable (tried: current,
		// t4, t5).
		{"sa", "sa_sm90_t4", 8.0, 3},
		{"sb", "sb", 10.0, 2},
		{"sc", "sc_sm90_t1", 9.6, 3},
		{"sg", "sg", 10.0, 1},
	} {
		w, ok := ws[c.spec]
		if !ok {
			t.Errorf("%s: no winner", c.spec)
			continue
		}
		if w.Variant != c.variant || w.Current != (c.variant == c.spec) || math.Abs(w.MeanMS-c.ms) > 1e-9 || w.Tried != c.tried {
			t.Errorf("%s: winner %s (current %v) %.6f ms of %d, want %s %.6f ms of %d", c.spec, w.Variant, w.Current, w.MeanMS, w.Tried, c.variant, c.ms, c.tried)
		}
		want := cands[0]
		for _, cand := range cands {
			if cand.Variant == c.variant {
				want = cand
			}
		}
		if w.Candidate != want {
			t.Errorf("%s: winner's candidate %+v, want %+v", c.spec, w.Candidate, want)
		}
	}
	if _, ok := ws["sh"]; ok {
		t.Errorf("sh has a winner, but nothing of it was usable: %+v", ws["sh"])
	}

	// Each winner carries the GPU and date of the run that timed it.
	if w := ws["sa"]; w.GPU != runs[1].GPU || w.Date != runs[1].Date {
		t.Errorf("sa's winner says %s, %s; its run was %s, %s", w.GPU, w.Date, runs[1].GPU, runs[1].Date)
	}
	// One document may carry both lists.
	both := HarnessResults{GPU: runs[1].GPU, Date: runs[1].Date, Results: runs[0].Results, Items: runs[1].Items}
	two := PickWinners(cands, runs...)
	for i := range two {
		two[i].GPU, two[i].Date = both.GPU, both.Date
	}
	if !reflect.DeepEqual(PickWinners(cands, both), two) {
		t.Error("results and items in one document pick differently than in two")
	}
	// Without the candidates' run, every current choice that is usable stays.
	for _, w := range PickWinners(cands, runs[0]) {
		if !w.Current && w.Spec != "sa" {
			t.Errorf("%s: %s wins without being timed", w.Spec, w.Variant)
		}
	}
	if w := winnersBySpec(t, PickWinners(cands, runs[0]))["sa"]; w.Variant != "sa" {
		// sa_sm90_t6 is timed in the harness run but over the error headroom.
		t.Errorf("sa from the harness run alone: %s", w.Variant)
	}
}

// TestTunePickWinnersNeedsCurrentTiming: a spec whose current choice has
// no verdict to go by (not run, no error figure) is left out, as
// PickWinners documents: without it the noise margin cannot be applied and
// a candidate is not known to beat what the spec has. One whose current
// choice was incorrect (se) takes its fastest usable candidate, which
// says what it replaces.
func TestTunePickWinnersNeedsCurrentTiming(t *testing.T) {
	ws := winnersBySpec(t, PickWinners(tuneFixtureCandidates(), tuneReadRuns(t, "e2e.json", "kernels.json")...))
	for _, s := range []string{"sd", "sf", "sh"} {
		if w, ok := ws[s]; ok {
			t.Errorf("%s: current choice has no usable timing, yet %s (%.3f ms) was picked", s, w.Variant, w.MeanMS)
		}
	}
	if w := ws["se"]; w.Variant != "se_sm90_t1" || w.MeanMS != 1 || w.Tried != 1 || w.Replaced != "was incorrect: trial 0: relative L2 error 1.000e-04 > 1e-05" {
		t.Errorf("se: winner %s %.3f ms of %d, replacing %q", w.Variant, w.MeanMS, w.Tried, w.Replaced)
	}
	for _, w := range ws {
		if w.Replaced != "" && w.Spec != "se" {
			t.Errorf("%s: replaces %q, but its current choice passed", w.Spec, w.Replaced)
		}
	}
}

// TestTunePickWinnersNonFinite: the kernel verifier writes a relative
// error of NaN or +Inf as a string ("NaN", "+Inf"); its report must still
// decode for apply-tune, and such a candidate is not usable.
func TestTunePickWinnersNonFinite(t *testing.T) {
	runs := tuneReadRuns(t, "e2e.json", "kernels_nonfinite.json")
	ws := winnersBySpec(t, PickWinners(tuneFixtureCandidates(), runs...))
	if w := ws["sb"]; w.Variant != "sb" {
		t.Errorf("sb: %s won with a NaN error", w.Variant)
	}
	if w := ws["sc"]; w.Variant != "sc_sm90_t2" {
		t.Errorf("sc: %s won, want sc_sm90_t2 (sc_sm90_t1's error is +Inf)", w.Variant)
	}
}

// TestTunePickWinnersPerTarget: a spec's targets are tuned apart. Both
// targets' current choices share the spec's name as their variant, so
// only a timing's target tells them apart; a timing without one (or of
// the other target) counts for neither.
func TestTunePickWinnersPerTarget(t *testing.T) {
	ffma := spec.CUDA{Family: spec.FFMA{BM: 256, BN: 32, BK: 8, TM: 8, TN: 4}}
	mma := spec.CUDA{Family: spec.MMA{BM: 128, BN: 32, BK: 16, WM: 32, WN: 32}}
	var cands []Candidate
	for _, tg := range []string{"sm80", "sm90"} {
		cands = append(cands,
			Candidate{Current: true, Backend: "cuda", Target: tg, Variant: "s", Spec: "s", SpecPath: "specs/s.yaml", Precision: "fp32", CUDA: ffma},
			Candidate{Backend: "cuda", Target: tg, Variant: "s_" + tg + "_t1", Spec: "s", SpecPath: "specs/s.yaml", Precision: "3xtf32", CUDA: mma})
	}
	timing := func(variant, target string, ms float64) Timing {
		e := lenientFloat(1e-7)
		tm := Timing{Spec: variant, Backend: "cuda", Target: target, Disposition: "passed", RelL2: &e}
		tm.TimeMS = &struct {
			Mean   float64 `json:"mean"`
			Median float64 `json:"median"`
		}{ms, ms}
		return tm
	}
	run := HarnessResults{GPU: "G", Date: "2031-01-01", Items: []Timing{
		timing("s", "sm80", 10), timing("s_sm80_t1", "sm80", 5), // sm80: t1 twice as fast
		timing("s", "sm90", 10), timing("s_sm90_t1", "sm90", 9.9), // sm90: t1 within the noise
		timing("s_sm90_t1", "sm80", 1), timing("s_sm80_t1", "", 1), // of no target's candidate
	}}
	ws := PickWinners(cands, run)
	if len(ws) != 2 {
		t.Fatalf("%d winners, want one a target: %+v", len(ws), ws)
	}
	for i, want := range []struct {
		target, variant string
		ms              float64
	}{{"sm80", "s_sm80_t1", 5}, {"sm90", "s", 10}} {
		if w := ws[i]; w.Target != want.target || w.Variant != want.variant || math.Abs(w.MeanMS-want.ms) > 1e-9 || w.Tried != 2 {
			t.Errorf("winner %d: %s %s %.3f ms of %d, want %s %s %.3f ms of 2", i, w.Target, w.Variant, w.MeanMS, w.Tried, want.target, want.variant, want.ms)
		}
	}
	// Without its own target's timing, a current choice has no winner.
	run.Items = run.Items[1:]
	if ws := PickWinners(cands, run); len(ws) != 1 || ws[0].Target != "sm90" {
		t.Errorf("with sm80's current choice untimed: %+v", ws)
	}
}

// tuneCopy copies committed specs into a fresh root.
func tuneCopy(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		data, err := os.ReadFile(filepath.Join(tuneRoot, p))
		if err != nil {
			t.Fatal(err)
		}
		tuneWrite(t, filepath.Join(root, p), string(data))
	}
	return root
}

func tuneWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func tuneRead(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

var tunedNote = regexp.MustCompile(`(?m)^ *# cuda tuned on (.+), (\d{4}-\d\d-\d\d): ([0-9.]+) ms mean \(kernel\), fastest of the (\d+) candidates that passed with error <= ([0-9.e-]+)(?:; problem [0-9a-f]{12})?\n`)

// TestTuneApplyReproducesCommitted: writing each committed spec's own
// choice back with the note it carries gives the file byte for byte, so
// setKernel keeps everything else (comments, flow lists, order) as it was.
func TestTuneApplyReproducesCommitted(t *testing.T) {
	specs := tuneLoad(t, tuneRoot)
	var paths []string
	for p := range specs {
		paths = append(paths, p)
	}
	root := tuneCopy(t, paths...)
	for _, p := range paths {
		want := tuneRead(t, filepath.Join(root, p))
		m := tunedNote.FindStringSubmatch(want)
		if m == nil || m[5] != tuneMaxRelL2Text {
			t.Logf("%s carries no tuning note under the current rule; skipped", p)
			continue
		}
		ms, _ := strconv.ParseFloat(m[3], 64)
		tried, _ := strconv.Atoi(m[4])
		w := Winner{Candidate: cudaCands(specs[p])[0], MeanMS: ms, Tried: tried}
		if err := ApplyTune(root, []Winner{w}, m[1], m[2]); err != nil {
			t.Fatal(err)
		}
		if got := tuneRead(t, filepath.Join(root, p)); got != want {
			t.Errorf("%s rewritten with its own choice and note differs:\n%s\nwant\n%s", p, got, want)
		}
	}
}

// specFields is everything of a spec but its kernel precision and tile.
func specFields(s *spec.Spec) any {
	return struct {
		Name, Title string
		Problem     spec.Problem
		Reference   spec.Reference
		Backends    []string
	}{s.Name, s.Title, s.Problem, s.Reference, s.Kernel.Backends}
}

// TestTuneApplyChangesChoice writes a different sm90 choice into copies
// of two specs with extra comments: only kernel.sm90.cuda and the note
// above it change; sm80's section is left as it was.
func TestTuneApplyChangesChoice(t *testing.T) {
	root := tuneCopy(t, tuneSpec58, tuneSpec73)
	// Extra comments: on a value line, inside kernel, above a key.
	for _, p := range []string{tuneSpec58, tuneSpec73} {
		path := filepath.Join(root, p)
		src := tuneRead(t, path)
		for old, new := range map[string]string{
			"\n  in_channels: 32\n":          "\n  in_channels: 32 # channels in\n",
			"\n  backends: [cuda, triton]\n": "\n  backends: [cuda, triton] # both backends\n",
			"\n  conv:\n":                    "\n  # the constructor's arguments\n  conv:\n",
		} {
			if !strings.Contains(src, old) {
				t.Fatalf("%s lacks %q", p, old)
			}
			src = strings.Replace(src, old, new, 1)
		}
		tuneWrite(t, path, src)
	}
	specs := tuneLoad(t, root)
	before := map[string]string{}
	for _, p := range []string{tuneSpec58, tuneSpec73} {
		before[p] = tuneRead(t, filepath.Join(root, p))
	}
	pick := func(p, precision string) Candidate {
		for _, c := range cudaCands(specs[p])[1:] {
			if c.Precision == precision {
				return c
			}
		}
		t.Fatalf("%s: no %s candidate", p, precision)
		return Candidate{}
	}
	winners := []Winner{
		{Candidate: pick(tuneSpec58, "3xtf32"), MeanMS: 2.7401, Tried: 4},
		{Candidate: pick(tuneSpec73, "fp32"), MeanMS: 1.5, Tried: 3},
	}
	if err := ApplyTune(root, winners, "Tune GPU T1", "2031-02-03"); err != nil {
		t.Fatal(err)
	}
	for _, w := range winners {
		p := w.SpecPath
		old, got := before[p], tuneRead(t, filepath.Join(root, p))
		note := fmt.Sprintf("    # cuda tuned on Tune GPU T1, 2031-02-03: %.3f ms mean (kernel), fastest of the %d candidates that passed with error <= 5e-6; problem %s\n",
			w.MeanMS, w.Tried, hashOf(t, filepath.Join(root, p), "sm90"))
		for _, s := range []string{"  sm90:\n" + note + "    cuda: " + w.CUDA.String() + "\n",
			"# channels in\n", "  backends: [cuda, triton] # both backends\n", "  # the constructor's arguments\n  conv:\n"} {
			if !strings.Contains(got, s) {
				t.Errorf("%s lacks %q:\n%s", p, s, got)
			}
		}
		// Both specs have a note on their sm90 choice already: it is replaced, not added.
		if n := strings.Count(old, "# cuda tuned on"); n == 0 || strings.Count(got, "# cuda tuned on") != n {
			t.Errorf("%s: the old note was not replaced:\n%s", p, got)
		}
		if strings.Contains(got, "precision and tile") || strings.Contains(got, "  precision: ") || strings.Contains(got, "  tile: ") {
			t.Errorf("%s: a version-1 key or note is left:\n%s", p, got)
		}
		// Every other line is kept, in order: all but the note and the
		// sm90 choice under it (and sm80's, which keeps its own).
		keep := func(s string) []string {
			var out []string
			lines := strings.Split(s, "\n")
			for i, line := range lines {
				if !strings.HasPrefix(line, "    # cuda tuned on") && (i == 0 || !strings.HasPrefix(lines[i-1], "    # cuda tuned on")) {
					out = append(out, line)
				}
			}
			return out
		}
		if a, b := keep(old), keep(got); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: other lines changed:\n%s\nwas\n%s", p, strings.Join(b, "\n"), strings.Join(a, "\n"))
		}
		// It parses to the same spec but for the kernel choice, and plans
		// to exactly the chosen tile.
		wasSpec, err := spec.Parse(p, []byte(old))
		if err != nil {
			t.Fatal(err)
		}
		pl := tunePlan(t, p, []byte(got))
		if !reflect.DeepEqual(specFields(pl.Spec), specFields(wasSpec)) {
			t.Errorf("%s: spec changed:\n%+v\nwas\n%+v", p, specFields(pl.Spec), specFields(wasSpec))
		}
		if k := pl.Spec.Kernel.For("sm90"); k.CUDA != w.CUDA || pl.Tile.Choice() != w.CUDA {
			t.Errorf("%s: plans %s (spec %s), want %s", p, pl.Tile.Choice(), k.CUDA, w.CUDA)
		}
		// (The plan's spec holds sm90's choices alone: read the file's.)
		gotSpec, err := spec.Parse(p, []byte(got))
		if err != nil {
			t.Fatal(err)
		}
		if a, b := gotSpec.Kernel.For("sm80").CUDA, wasSpec.Kernel.For("sm80").CUDA; a != b {
			t.Errorf("%s: sm80's choice changed: %s -> %s", p, b, a)
		}
	}
	// The tree still loads, and its own sm90 choices are now the winners;
	// sm80 plans what it did.
	after := tuneLoad(t, root)
	for _, w := range winners {
		if c := cudaCands(after[w.SpecPath])[0]; c.Precision != w.Precision || c.CUDA != w.CUDA {
			t.Errorf("%s: own choice now %s %s, want %s %s", w.SpecPath, c.Precision, c.CUDA, w.Precision, w.CUDA)
		}
		if a, b := after[w.SpecPath].Plan(plan.SM80).Tile.Choice(), specs[w.SpecPath].Plan(plan.SM80).Tile.Choice(); a != b {
			t.Errorf("%s: sm80 plans %s, was %s", w.SpecPath, a, b)
		}
	}
}

// TestTuneApplyAddsKernel: a spec without a kernel section gets one, at
// the end, holding the winner's target section with the note; the other
// target keeps the default choice.
func TestTuneApplyAddsKernel(t *testing.T) {
	root := tuneCopy(t, tuneSpec58)
	path := filepath.Join(root, tuneSpec58)
	src := tuneRead(t, path)
	i := strings.Index(src, "\nkernel:\n")
	if i < 0 {
		t.Fatalf("%s has no kernel section", tuneSpec58)
	}
	i++
	tuneWrite(t, path, src[:i])
	l := tuneLoad(t, root)[tuneSpec58]
	var c Candidate
	for _, cand := range cudaCands(l) {
		if cand.Precision == "3xtf32" {
			c = cand
			break
		}
	}
	replaced := "failed: compile sm_80: registers spill to local memory: " + strings.Repeat("x ", 60)
	if err := ApplyTune(root, []Winner{{Candidate: c, MeanMS: 1, Tried: 2, Replaced: replaced}}, "G", "2031-01-01"); err != nil {
		t.Fatal(err)
	}
	got := tuneRead(t, path)
	want := src[:i] + "kernel:\n  sm90:\n    # cuda tuned on G, 2031-01-01: 1.000 ms mean (kernel), fastest of the 2 candidates that passed with error <= 5e-6" +
		" (replacing a choice that " + replaced[:119] + "...); problem " + hashOf(t, path, "sm90") + "\n" +
		"    cuda: " + c.CUDA.String() + "\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	p := tunePlan(t, tuneSpec58, []byte(got))
	if p.Tile.Choice() != c.CUDA || !reflect.DeepEqual(p.Spec.Kernel.Backends, spec.DefaultBackends) {
		t.Errorf("plans %+v with backends %v", p.Tile, p.Spec.Kernel.Backends)
	}
	// sm80 plans what a spec without a kernel section does.
	bare, err := spec.Parse(tuneSpec58, []byte(src[:i]))
	if err != nil {
		t.Fatal(err)
	}
	gotSpec, err := spec.Parse(tuneSpec58, []byte(got))
	if err != nil {
		t.Fatal(err)
	}
	p80, err := plan.New(gotSpec, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	d80, err := plan.New(bare, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	if p80.Tile.Choice() != d80.Tile.Choice() || p80.Tile.Choice() == c.CUDA {
		t.Errorf("sm80 plans %s, want the default %s (not the sm90 winner)", p80.Tile.Choice(), d80.Tile.Choice())
	}
}

// With labels, only those candidates are rendered and listed, beside the
// specs' own choices.
func TestTuneWriteTuneOnly(t *testing.T) {
	root := tuneCopy(t, tuneSpec58, tuneSpec73)
	dir := filepath.Join(t.TempDir(), "tune")
	n, err := WriteTune(root, dir, TuneOptions{Only: []string{"x2", "t1"}})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range manifest {
		if !c.Current {
			got = append(got, c.Label())
			if _, err := os.Stat(filepath.Join(dir, c.Variant)); err != nil {
				t.Errorf("%s not rendered: %v", c.Variant, err)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if n != len(manifest) || len(got) == 0 || slices.ContainsFunc(got, func(l string) bool { return l != "x2" && l != "t1" }) {
		t.Errorf("%d candidates, labels %v", n, got)
	}
	// Two specs, two backends and two targets each.
	if currents, want := n-len(got), 2*2*len(plan.Targets); currents != want {
		t.Errorf("%d current choices listed, want %d", currents, want)
	}
	for _, tg := range plan.Targets {
		if !slices.ContainsFunc(manifest, func(c Candidate) bool { return !c.Current && c.Target == tg.Name }) {
			t.Errorf("no %s candidate listed", tg.Name)
		}
	}
	if want := len(got) + 2; len(entries) != want { // their folders, specs/ and the manifest
		t.Errorf("%d entries in the tuning folder, want %d", len(entries), want)
	}
}

func TestTuneWriteTune(t *testing.T) {
	root := tuneCopy(t, tuneSpec58, tuneSpec73)
	dir := filepath.Join(t.TempDir(), "tune")
	n, err := WriteTune(root, dir, TuneOptions{})
	if err != nil {
		t.Fatal(err)
	}
	specs := tuneLoad(t, root)
	want := append(Candidates(specs[tuneSpec58]), Candidates(specs[tuneSpec73])...)
	if n != len(want) {
		t.Errorf("WriteTune: %d candidates, want %d", n, len(want))
	}
	manifest, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(manifest, want) {
		t.Errorf("manifest:\n%+v\nwant\n%+v", manifest, want)
	}
	for _, c := range manifest {
		folder := filepath.Join(dir, c.Variant)
		specFile := filepath.Join(dir, "specs", c.Variant+".yaml")
		if c.Current {
			// Rendered in out/ already: nothing in the tuning folder.
			for _, p := range []string{folder, specFile} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s written for the current choice", p)
				}
			}
			continue
		}
		// A candidate renders for its own target alone: problem.py and its
		// backend's submission for that target, nothing else.
		files, _ := os.ReadDir(folder)
		var names []string
		for _, f := range files {
			names = append(names, f.Name())
		}
		if want := sorted([]string{c.Backend + "." + c.Target + ".py", "problem.py"}); !reflect.DeepEqual(names, want) {
			t.Errorf("%s: files %v, want %v", c.Variant, names, want)
		}
		if c.Backend == "triton" {
			if _, err := os.Stat(specFile); err == nil {
				t.Errorf("%s: a kernel-verifier spec for a Triton candidate", c.Variant)
			}
			continue
		}
		cudaFile := "cuda." + c.Target + ".py"
		if cuda := tuneRead(t, filepath.Join(folder, cudaFile)); !strings.Contains(cuda, "convtgen_"+c.Variant) {
			t.Errorf("%s/%s does not build its own extension convtgen_%s", c.Variant, cudaFile, c.Variant)
		}
		// Its spec file holds the choice in the candidate's target section
		// and plans it there.
		src := tuneRead(t, specFile)
		if !strings.Contains(src, "  "+c.Target+":\n    # tuning candidate of "+c.SpecPath+"\n    cuda: ") {
			t.Errorf("%s.yaml lacks its note in kernel.%s:\n%s", c.Variant, c.Target, src)
		}
		tg, err := plan.TargetNamed(c.Target)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := spec.Parse(specFile, []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.New(cs, tg)
		if err != nil {
			t.Fatalf("%s.yaml does not plan for %s: %v", c.Variant, c.Target, err)
		}
		if p.Spec.Name != c.Variant || p.Spec.Kernel.PrecisionFor("cuda") != c.Precision || p.Tile.Choice() != c.CUDA {
			t.Errorf("%s.yaml plans %s %s %s, want %s %s %s", c.Variant, p.Spec.Name, p.Spec.Kernel.PrecisionFor("cuda"), p.Tile.Choice(), c.Variant, c.Precision, c.CUDA)
		}
		orig := specs[c.SpecPath].Plan(tg)
		if p.Conv != orig.Conv || !reflect.DeepEqual(p.Spec.Reference, orig.Spec.Reference) {
			t.Errorf("%s.yaml is not the problem of %s", c.Variant, c.SpecPath)
		}
	}
	// The candidates' specs form a valid spec tree of their own (unique
	// names), as bin/verify -specs reads them.
	cudaOthers := 0
	for _, c := range want {
		if c.Backend == "cuda" && !c.Current {
			cudaOthers++
		}
	}
	if loaded, err := LoadAll(dir); err != nil || len(loaded) != cudaOthers {
		t.Errorf("LoadAll(tuning folder): %d specs, %v", len(loaded), err)
	}
}

func TestTuneReadManifestErrors(t *testing.T) {
	if _, err := ReadManifest(filepath.Join(t.TempDir(), "none.json")); err == nil {
		t.Error("missing manifest read without error")
	}
	bad := filepath.Join(t.TempDir(), ManifestFile)
	tuneWrite(t, bad, "{not json")
	if _, err := ReadManifest(bad); err == nil {
		t.Error("malformed manifest read without error")
	}
	// A choice the spec refuses names the file and the candidate.
	tuneWrite(t, bad, `[{"Backend": "cuda", "Target": "sm80", "CUDA": "{wgmma: {slabs: 1}}"},
		{"Backend": "cuda", "Target": "sm80", "CUDA": "{wgmma: {winograd: true, cp_async: true}}"}]`)
	_, err := ReadManifest(bad)
	if err == nil || !strings.HasPrefix(err.Error(), bad+": candidate 2: ") || !strings.Contains(err.Error(), "wgmma.winograd") {
		t.Errorf("refused choice: %v", err)
	}
}

// TestTuneTritonCandidates: each committed spec's Triton candidates start
// with its own choice, are distinct, and are fully resolved (rendering a
// candidate's choice gives that choice back).
func TestTuneTritonCandidates(t *testing.T) {
	for _, l := range tuneLoad(t, tuneRoot) {
		if !slices.Contains(sm90(l).Spec.Kernel.Backends, "triton") {
			continue // level 2's ops run in CUDA passes only
		}
		cs := tritonCands(l)
		if len(cs) < 2 || !cs[0].Current || cs[0].Backend != "triton" || cs[0].Variant != sm90(l).Spec.Name {
			t.Errorf("%s: candidates %+v", l.Path, cs)
			continue
		}
		seen := map[spec.Triton]string{}
		for i, c := range cs {
			if i > 0 && (c.Current || c.Backend != "triton" || !strings.HasPrefix(c.Variant, sm90(l).Spec.Name+"_sm90_x")) {
				t.Errorf("%s: candidate %d = %+v", l.Path, i, c)
			}
			if other, dup := seen[c.Triton]; dup {
				t.Errorf("%s: %s repeats %s", l.Path, c.Variant, other)
			}
			seen[c.Triton] = c.Variant
			s := *sm90(l).Spec
			s.Kernel = c.kernel()
			p, err := plan.New(&s, plan.SM90)
			if err != nil {
				t.Errorf("%s: %s: %v", l.Path, c.Variant, err)
				continue
			}
			if got := resolvedTriton(p); got != c.Triton || c.Precision != c.Triton.Precision {
				t.Errorf("%s: %s resolves to %s, not %s (precision %s)", l.Path, c.Variant, got, c.Triton, c.Precision)
			}
		}
	}
}

// TestTuneApplyTriton: an sm90 Triton winner goes into kernel.sm90.triton,
// with its note, and leaves the CUDA choice and sm80's Triton choice alone.
func TestTuneApplyTriton(t *testing.T) {
	root := tuneCopy(t, tuneSpec58)
	before := tuneLoad(t, root)[tuneSpec58]
	w := tritonCands(before)[2]
	if err := ApplyTune(root, []Winner{{Candidate: w, MeanMS: 2, Tried: 5}}, "G", "2031-01-01"); err != nil {
		t.Fatal(err)
	}
	src := tuneRead(t, filepath.Join(root, tuneSpec58))
	note := "    # triton tuned on G, 2031-01-01: 2.000 ms mean (end to end), fastest of the 5 candidates that passed with error <= 5e-6; problem " +
		hashOf(t, filepath.Join(root, tuneSpec58), "sm90") + "\n    triton: " + w.Triton.String() + "\n"
	if !strings.Contains(src, note) {
		t.Errorf("spec lacks\n%s\ngot\n%s", note, src)
	}
	after := tuneLoad(t, root)[tuneSpec58]
	if got := tritonCands(after)[0].Triton; got != w.Triton {
		t.Errorf("Triton choice after applying: %s, want %s", got, w.Triton)
	}
	if a, b := cudaCands(after)[0], cudaCands(before)[0]; a.Precision != b.Precision || a.CUDA != b.CUDA {
		t.Errorf("CUDA choice changed: %s -> %s", b.Choice(), a.Choice())
	}
	if !strings.Contains(src, "  sm90:\n") || strings.Index(src, note) < strings.Index(src, "  sm90:\n") {
		t.Errorf("the note is not in sm90's section:\n%s", src)
	}
	a80, b80 := TritonCandidates(after.Path, after.Plan(plan.SM80))[0], TritonCandidates(before.Path, before.Plan(plan.SM80))[0]
	if a80.Triton != b80.Triton || a80.Triton == w.Triton {
		t.Errorf("sm80's Triton choice %s, was %s (the sm90 winner is %s)", a80.Triton, b80.Triton, w.Triton)
	}
}

// sm90 is a loaded spec's sm90 plan, the target the tuning tests follow.
func sm90(l Loaded) *plan.Plan { return l.Plan(plan.SM90) }

// cudaCands and tritonCands are a spec's candidates for sm90.
func cudaCands(l Loaded) []Candidate   { return cudaCandidates(l.Path, sm90(l)) }
func tritonCands(l Loaded) []Candidate { return TritonCandidates(l.Path, sm90(l)) }

// Plan is the loaded spec's plan for target t.
func (l Loaded) Plan(t plan.Target) *plan.Plan {
	for _, p := range l.Plans {
		if p.Target.Name == t.Name {
			return p
		}
	}
	return nil
}

// hashOf is the problem hash of the spec file at path on target.
func hashOf(t *testing.T, path, target string) string {
	t.Helper()
	s, err := spec.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ProblemHash(s, target)
}

// -under keeps one folder's specs; -top keeps, where the chooser ranks a
// backend (the zoo spec leaves its choice open), its cheapest estimates
// alone, the spec's own choice (the cheapest) among them, bulk-weight
// twins of the tuning space's wgmma tiles included.
func TestTuneWriteTuneTop(t *testing.T) {
	const zoo = "specs/zoo/unet3d_up_mid.yaml" // its sm90 cheapest are tiles with bulk weights
	root := tuneCopy(t, tuneSpec58, zoo)
	all, err := WriteTune(root, filepath.Join(t.TempDir(), "all"), TuneOptions{Under: "specs/zoo/"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "top")
	n, err := WriteTune(root, dir, TuneOptions{Under: "specs/zoo/", Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := ReadManifest(filepath.Join(dir, ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	top, err := topChoices(root, tuneLoad(t, root)[zoo], 3)
	if err != nil {
		t.Fatal(err)
	}
	perList := map[string]int{}
	for _, c := range manifest {
		if c.SpecPath != zoo {
			t.Fatalf("%s listed: not under specs/zoo/", c.SpecPath)
		}
		if !c.Current && VariantSpec(c.Variant, c.Target) != c.Spec {
			t.Errorf("%s: VariantSpec %q, want %q", c.Variant, VariantSpec(c.Variant, c.Target), c.Spec)
		}
		key := c.Backend + " " + c.Target
		if ranked := top[key]; len(ranked) != 3 || !ranked[c.Choice()] {
			t.Errorf("%s %s: %s is not among the chooser's three cheapest %v", c.Variant, key, c.Choice(), ranked)
		}
		perList[key]++
	}
	for _, tg := range plan.Targets {
		for _, b := range []string{"cuda", "triton"} {
			if k := b + " " + tg.Name; perList[k] != 3 {
				t.Errorf("%s: %d candidates listed, want the three cheapest (the current among them)", k, perList[k])
			}
		}
	}
	if n != len(manifest) || n >= all {
		t.Errorf("%d candidates with -top 3, %d without", n, all)
	}
}
