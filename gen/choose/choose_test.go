package choose

import (
	"reflect"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// convSpec is a spec of conv with kernel k, as the decoder gives it.
func convSpec(t *testing.T, c geom.Conv, k spec.Kernel) *spec.Spec {
	t.Helper()
	s, err := spec.Parse("specs/x.yaml", []byte(spec.Generic("x", "x", c, "rand", k)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var (
	one = [3]int{1, 1, 1}
	// big is a stride-1 problem of 64 channels: tensor-core work.
	big = geom.Conv{Batch: 8, InChannels: 64, OutChannels: 64, In: [3]int{16, 32, 32}, Kernel: [3]int{3, 3, 3}, Stride: one, Dilation: one, Groups: 1}
	// tiny is a few thousand products: launches decide.
	tiny = geom.Conv{Batch: 1, InChannels: 8, OutChannels: 8, In: [3]int{4, 4, 4}, Kernel: [3]int{2, 2, 2}, Stride: [3]int{2, 2, 2}, Dilation: one, Groups: 1}
)

// An open choice is filled with the cheapest candidate, the same every
// run; the CUDA pick is the first of a ranking sorted by estimate.
func TestChooseFillsOpenChoice(t *testing.T) {
	s := convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}})
	for _, tg := range plan.Targets {
		got, d := Options{}.Choose(s, tg)
		if len(d.CUDA) < 5 {
			t.Fatalf("%s: %d candidates ranked", tg.Name, len(d.CUDA))
		}
		for i := 1; i < len(d.CUDA); i++ {
			if d.CUDA[i].Estimate.Seconds < d.CUDA[i-1].Estimate.Seconds {
				t.Errorf("%s: ranking out of order at %d", tg.Name, i)
			}
		}
		k := got.Kernel.For(tg.Name)
		if k.CUDA.Family != d.CUDA[0].CUDA {
			t.Errorf("%s: filled %v, ranked first %v", tg.Name, k.CUDA, d.CUDA[0].CUDA)
		}
		if k.CUDA.Of().Precision() != "3xtf32" {
			t.Errorf("%s: 64 channels at stride 1 got %s, want a tensor-core family", tg.Name, k.CUDA)
		}
		again, _ := Options{}.Choose(s, tg)
		if !reflect.DeepEqual(again.Kernel, got.Kernel) {
			t.Errorf("%s: two runs chose differently", tg.Name)
		}
	}
	if s.Kernel.Targets != nil {
		t.Errorf("the spec itself was changed: %v", s.Kernel.Targets)
	}
}

// A family without numbers gets its tiles from that family's candidates,
// its flags kept; a family with a number is the spec's own.
func TestChooseKeepsWhatTheSpecGives(t *testing.T) {
	s := convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.MMA{Presplit: true}}})
	_, d := Options{}.Choose(s, plan.SM90)
	if len(d.CUDA) < 2 {
		t.Fatalf("%d mma candidates", len(d.CUDA))
	}
	for _, r := range d.CUDA {
		if m, ok := r.CUDA.(spec.MMA); !ok || !m.Presplit {
			t.Errorf("candidate %v: not a presplit mma tile", r.CUDA)
		}
	}
	given := convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: spec.FFMA{BM: 64}}})
	if got, d := (Options{}).Choose(given, plan.SM90); got != given || d.CUDA != nil {
		t.Errorf("a tile with bm given was re-chosen: %v", d.CUDA)
	}
}

// On sm_90a every wgmma tile is weighed with its weights by bulk copies
// too (each ranked tile has its bulk twin ranked), and the big problem's
// pick takes them; sm80 has no bulk copies, so none of its candidates
// resolves to them.
func TestChooseWeighsBulkWeights(t *testing.T) {
	s := convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}})
	for _, tg := range plan.Targets {
		_, d := Options{}.Choose(s, tg)
		ranked := map[spec.WGMMA]bool{}
		for _, r := range d.CUDA {
			if w, ok := r.CUDA.(spec.WGMMA); ok {
				ranked[w] = true
				if w.BulkWeights && !tg.WGMMA {
					t.Errorf("%s: candidate %v has bulk weights", tg.Name, w)
				}
			}
		}
		if !tg.WGMMA {
			continue
		}
		for w := range ranked {
			twin := w
			twin.BulkWeights = true
			if !ranked[twin] {
				t.Errorf("%s: %v ranked without its bulk twin", tg.Name, w)
			}
		}
		if w, ok := d.CUDA[0].CUDA.(spec.WGMMA); !ok || !w.BulkWeights {
			t.Errorf("%s: picked %v, want a wgmma tile with bulk weights", tg.Name, d.CUDA[0].CUDA)
		}
	}
}

// Tiny problems: the fewest launches win (no wgmma's re-layout and fill).
func TestChooseTinyTakesFewLaunches(t *testing.T) {
	s := convSpec(t, tiny, spec.Kernel{Backends: []string{"cuda"}})
	for _, tg := range plan.Targets {
		_, d := Options{}.Choose(s, tg)
		if len(d.CUDA) == 0 {
			t.Fatalf("%s: nothing ranked", tg.Name)
		}
		fewest := d.CUDA[0].Estimate.Launches
		for _, r := range d.CUDA {
			fewest = min(fewest, r.Estimate.Launches)
		}
		if d.CUDA[0].Estimate.Launches != fewest {
			t.Errorf("%s: picked %s with %d launches; %d would do", tg.Name, d.CUDA[0].Resolved, d.CUDA[0].Estimate.Launches, fewest)
		}
		if d.CUDA[0].Estimate.Bound() != "compute" && d.CUDA[0].Estimate.Seconds > 3*Machines[tg.Name].Launch {
			t.Errorf("%s: a tiny problem estimated at %v", tg.Name, d.CUDA[0].Estimate)
		}
	}
}

// The launch term: a wgmma tile counts its re-layout, and its fill where
// a phase has no tap; the others a repack and the GEMM.
func TestEstimateCountsLaunches(t *testing.T) {
	tapless := geom.Conv{Batch: 2, InChannels: 16, OutChannels: 16, In: [3]int{8, 8, 8}, Kernel: [3]int{3, 3, 3}, Stride: [3]int{2, 2, 2},
		Padding: one, Dilation: [3]int{2, 2, 2}, Groups: 1}
	for _, c := range []struct {
		conv geom.Conv
		fam  spec.Family
		want int
	}{{big, spec.FFMA{}, 2}, {big, spec.Direct{}, 2}, {big, spec.MMA{}, 2}, {big, spec.WGMMA{}, 3}, {tapless, spec.WGMMA{}, 4}} {
		s := convSpec(t, c.conv, spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: c.fam}})
		p, err := plan.New(s, plan.SM90)
		if err != nil {
			t.Fatal(err)
		}
		if got := EstimateCUDA(p).Launches; got != c.want {
			t.Errorf("%s on %v: %d launches, want %d", spec.CUDA{Family: c.fam}, c.conv.Stride, got, c.want)
		}
	}
}

// The Winograd tile of two slabs over 64 columns is ranked on sm90 and
// left out on sm80, where its mma.sync code spills on some shapes.
func TestChooseLeavesOutSpillingSyncTiles(t *testing.T) {
	s := convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}})
	for _, tg := range plan.Targets {
		_, d := Options{}.Choose(s, tg)
		ranked := false
		for _, r := range d.CUDA {
			if w, ok := r.CUDA.(spec.WGMMA); ok && w.Winograd && w.Slabs == 2 {
				ranked = true
			}
		}
		if ranked == !tg.WGMMA {
			t.Errorf("%s: a two-slab Winograd tile of 64 columns ranked %v, want %v", tg.Name, ranked, tg.WGMMA)
		}
	}
}

// TestWithCpAsync: the cp.async variant of a choice is a valid one: a tile
// that takes its tiles through registers (MMA's presplit, wgmma's Winograd
// and early inputs) is left as it is.
func TestWithCpAsync(t *testing.T) {
	for _, c := range []struct{ own, want spec.Family }{
		{spec.FFMA{}, spec.FFMA{CpAsync: true}},
		{spec.MMA{}, spec.MMA{CpAsync: true}},
		{spec.MMA{Presplit: true}, spec.MMA{Presplit: true}},
		{spec.WGMMA{Slabs: 1}, spec.WGMMA{Slabs: 1, CpAsync: true}},
		{spec.WGMMA{Winograd: true}, spec.WGMMA{Winograd: true}},
		{spec.WGMMA{EarlyInputs: true}, spec.WGMMA{EarlyInputs: true}},
		{spec.Direct{}, spec.Direct{}},
	} {
		got := WithCpAsync(c.own)
		if got != c.want {
			t.Errorf("WithCpAsync(%s) = %s, want %s", spec.CUDA{Family: c.own}, spec.CUDA{Family: got}, spec.CUDA{Family: c.want})
		}
		s := spec.Spec{Kernel: spec.Kernel{CUDA: spec.CUDA{Family: got}}}
		if errs := s.FamilyErrors(); len(errs) > 0 {
			t.Errorf("WithCpAsync(%s): %v", spec.CUDA{Family: c.own}, errs)
		}
	}
}

// TestSplitKWhereTheGridIsSmall: the chooser splits the reduction of a
// small output computed from many input channels (MONAI's deepest up
// layer, 432 rows a phase by 64 channels over 384 x 8 taps: the unsplit
// grid is under half a wave), and of no large problem, where the partial
// outputs' traffic and the extra launch buy nothing.
func TestSplitKWhereTheGridIsSmall(t *testing.T) {
	deep := geom.Conv{Batch: 2, InChannels: 384, OutChannels: 64, In: [3]int{6, 6, 6}, Kernel: [3]int{3, 3, 3},
		Stride: [3]int{2, 2, 2}, Padding: one, OutputPadding: one, Dilation: one, Groups: 1, Bias: true}
	for _, tg := range plan.Targets {
		_, d := Options{}.Choose(convSpec(t, deep, spec.Kernel{Backends: []string{"cuda"}}), tg)
		if spec.SplitK(d.CUDA[0].CUDA) < 2 {
			t.Errorf("%s: deep layer chose %v, want a split reduction", tg.Name, d.CUDA[0].CUDA)
		}
		_, d = Options{}.Choose(convSpec(t, big, spec.Kernel{Backends: []string{"cuda"}}), tg)
		if spec.SplitK(d.CUDA[0].CUDA) > 1 {
			t.Errorf("%s: a large problem chose %v, a split reduction", tg.Name, d.CUDA[0].CUDA)
		}
	}
}
