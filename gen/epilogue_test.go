package gen

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// biasAdds are the epilogues' bias terms, one per kernel form: FFMA,
// mma.sync and direct rows, the W window, wgmma's fragments and Winograd
// pairs, kw_in_n's column sums, the wgmma fill, the sum of split_k's
// partial outputs, Triton.
var biasAdds = []string{
	"+ __ldg(bias + c)", "const float b = __ldg(bias + c);", "+ bias[grp * kCoutG + co]",
	"bias[grp * kCoutG + nt * kCoT + c + i]", "bias[(int)(i / kOutDHW % kCout)]",
	"sum + __ldg(bias + (int)(i / kOutDHW % kCout))", "acc = acc + bias[None, :]",
}

func addsBias(src string) bool {
	for _, b := range biasAdds {
		if strings.Contains(src, b) {
			return true
		}
	}
	return false
}

// TestEpilogueFromPlan: the kernels add the bias where the plan's
// epilogue says so and nowhere else, for every CUDA family and Triton: a
// plan of a problem with bias whose epilogue is told to leave it out
// renders kernels without it (the templates print the plan's step, not
// the problem's flag).
func TestEpilogueFromPlan(t *testing.T) {
	specs, err := Random(300, 7)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, l := range specs {
		p := l.Plans[0]
		if !p.Conv.Bias || !p.Epilogue.Bias {
			if p.Conv.Bias != p.Epilogue.Bias {
				t.Errorf("%s: bias %v, epilogue bias %v", p.Spec.Name, p.Conv.Bias, p.Epilogue.Bias)
			}
			continue
		}
		form := p.Tile.Family().Key()
		if p.Tile.TW() > 0 {
			form = "window"
		}
		if seen[form] && seen["triton"] {
			continue
		}
		seen[form], seen["triton"] = true, true
		without := *p
		without.Epilogue.Bias = false
		with, err := r.Render([]*plan.Plan{p}, l.Path)
		if err != nil {
			t.Fatal(err)
		}
		bare, err := r.Render([]*plan.Plan{&without}, l.Path)
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range with {
			name := filepath.Base(f.Path)
			if name != SubmissionFile("cuda", p.Target) && name != SubmissionFile("triton", p.Target) {
				continue
			}
			if !addsBias(string(f.Data)) {
				t.Errorf("%s %s (%s): no bias added", p.Spec.Name, name, form)
			}
			if addsBias(string(bare[i].Data)) {
				t.Errorf("%s %s (%s): bias added with the epilogue's bias off", p.Spec.Name, name, form)
			}
		}
	}
	for _, form := range []string{"ffma", "direct", "window", "mma", "wgmma", "triton"} {
		if !seen[form] {
			t.Errorf("no %s kernel with bias drawn", form)
		}
	}
}

// TestChainDocSaysWhatRuns: a level-2 file's docstring names the ops its
// store applies and every pass in launch order, and a BatchNorm's
// running-statistics update; a level-1 file says nothing of ops.
func TestChainDocSaysWhatRuns(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	level2 := 0
	for _, l := range specs {
		for _, p := range l.Plans {
			c := p.Epilogue.Chain
			if !c.Any() {
				if newChainView(c, p.Epilogue.Ops) != nil {
					t.Errorf("%s: a chain view without ops", p.Spec.Name)
				}
				continue
			}
			level2++
			doc := strings.ReplaceAll(newChainView(c, p.Epilogue.Ops).Doc, "\n", " ")
			if len(p.Epilogue.Ops) > 0 && !strings.Contains(doc, "store applies "+p.Epilogue.Ops[0].Kind) {
				t.Errorf("%s: the docstring does not name the fused %s: %q", p.Spec.Name, p.Epilogue.Ops[0].Kind, doc)
			}
			if got := strings.Count(doc, ";") + 1; len(c.Passes) > 0 && got < len(c.Passes) {
				t.Errorf("%s: %d passes, the docstring lists %d: %q", p.Spec.Name, len(c.Passes), got, doc)
			}
			if (len(c.Passes) > 0) != strings.Contains(doc, "After the convolution") {
				t.Errorf("%s: %d passes, docstring %q", p.Spec.Name, len(c.Passes), doc)
			}
			for _, u := range c.Updates {
				if !strings.Contains(doc, u.Name) {
					t.Errorf("%s: the update kernel %s is not named: %q", p.Spec.Name, u.Name, doc)
				}
			}
		}
	}
	if level2 != 2*19 {
		t.Errorf("%d level-2 plans, want 19 problems for two targets", level2)
	}
}

// TestPassKernelsComputeWhatTheyRead renders every level-2 submission:
// the forward allocates the stats kernels' partial results exactly when
// it has a stats kernel, zeroes nothing, and each kernel of the chain
// computes an element's index i, channel c or segment q only where it
// reads it.
func TestPassKernelsComputeWhatTheyRead(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	local := regexp.MustCompile(`const (?:int|long long) (i|c|q) = `)
	kernels := 0
	for _, l := range specs {
		for _, p := range l.Plans {
			c := p.Epilogue.Chain
			if !c.Any() || p.Spectral != nil {
				continue // a spectral plan runs none of the chain's passes
			}
			files, err := r.Render([]*plan.Plan{p}, l.Path)
			if err != nil {
				t.Fatal(err)
			}
			var src string
			for _, f := range files {
				if filepath.Base(f.Path) == SubmissionFile("cuda", p.Target) {
					src = string(f.Data)
				}
			}
			if strings.Contains(src, "torch::zeros") || strings.Contains(src, "(void)") {
				t.Errorf("%s: a buffer zeroed or a value computed for nothing", p.Spec.Name)
			}
			if allocated := strings.Contains(src, "auto parts = torch::empty("); allocated != (len(c.Slots) > 0) {
				t.Errorf("%s: partial results allocated %t, %d stats slots", p.Spec.Name, allocated, len(c.Slots))
			}
			for _, q := range append(slices.Clone(c.Prologue), c.Passes...) {
				start := strings.Index(src, "void "+q.Name+"(")
				if start < 0 {
					t.Fatalf("%s: no kernel %s", p.Spec.Name, q.Name)
				}
				body := src[start : start+strings.Index(src[start:], "\n}\n")]
				kernels++
				for _, m := range local.FindAllStringSubmatchIndex(body, -1) {
					name := body[m[2]:m[3]]
					rest := body[m[1]:]
					if !regexp.MustCompile(`\b` + name + `\b`).MatchString(rest) {
						t.Errorf("%s: %s computes %s and never reads it", p.Spec.Name, q.Name, name)
					}
				}
			}
		}
	}
	if kernels < 2*30 {
		t.Errorf("%d kernels of the chains checked", kernels)
	}
}

// TestSplitKNeedsUnfusedOps: the ops a level-2 store fuses run on each
// output's whole sum, which a split_k tile's main kernel never holds, so
// the plan refuses split_k there; a forward whose ops all run after the
// convolution (passes) takes it, the kernel that adds the splits writing
// the y the passes read.
func TestSplitKNeedsUnfusedOps(t *testing.T) {
	specs, err := LoadAll("..")
	if err != nil {
		t.Fatal(err)
	}
	fused, unfused := 0, 0
	for _, l := range specs {
		p := l.Plans[0]
		if !p.Epilogue.Chain.Any() {
			continue
		}
		s := *l.Spec()
		s.Kernel.CUDA = spec.CUDA{Family: spec.MMA{SplitK: 2}}
		got, err := plan.New(&s, p.Target)
		switch {
		case len(p.Epilogue.Ops) > 0:
			fused++
			if err == nil || !strings.Contains(err.Error(), "split_k needs a forward whose ops run after it") {
				t.Errorf("%s: fused %s with split_k: %v", s.Name, p.Epilogue.Ops[0].Kind, err)
			}
		case err == nil:
			unfused++
			if got.Names.AddSplits == "" {
				t.Errorf("%s: split_k 2 without the kernel that adds the splits", s.Name)
			}
		}
	}
	if fused == 0 || unfused == 0 {
		t.Errorf("%d level-2 forwards with fused ops, %d without planned with split_k: want some of each", fused, unfused)
	}
}
