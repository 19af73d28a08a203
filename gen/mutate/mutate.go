// Package mutate plants known bugs in a kernel plan, so that the GPU
// verifier can be shown to catch them (verify -mutate): a mutated plan
// renders through the normal templates into a kernel that is wrong in one
// specific, realistic way, and the verifier must call it incorrect.
//
// Every mutation keeps the kernel memory-safe. The emitted kernel (see
// templates/cuda.py.tmpl) reads the input only behind unsigned range checks
// on (q + Off) in every dimension, so any tap offset is a safe read; it
// reads weights at tap Flat with no check, so Flat must stay in [0, taps);
// and it writes output (R + stride*q) for q < Q decoded from m < P.m, and
// channels co < CoutG, so a phase's residue R may only change to one whose
// last output R + stride*(Q-1) is still inside the output. A mutation that
// could write out of bounds would be a crash (failed), not the incorrect
// verdict we want to see, and could corrupt other buffers.
package mutate

import (
	"errors"
	"slices"
	"strings"

	"convtgen/gen"
	"convtgen/gen/plan"
)

// Mutation is one planted bug.
type Mutation struct {
	Name        string
	Description string
	// Applies reports whether the bug can be planted in p so that the
	// kernel's outputs are wrong (for inputs in general position) while
	// every access stays in bounds. (A wgmma kernel reads its input
	// without range checks, inside a border sized for its own taps, so
	// the mutations that move its input reads do not apply to it.)
	Applies func(p *plan.Plan) bool
	// Apply plants the bug in p. It changes fields of the Plan struct it is
	// given but never writes through the slices it shares with the plan it
	// was copied from: the Phases or Taps it changes are copied first. Use
	// On to get a mutated copy of a plan.
	Apply func(p *plan.Plan)
}

// On returns a mutated copy of p; p itself is left untouched.
func (m Mutation) On(p *plan.Plan) *plan.Plan {
	c := *p
	m.Apply(&c)
	return &c
}

// All lists the mutations, in a fixed order.
func All() []Mutation {
	return []Mutation{
		{
			Name:        "padding-off-by-one",
			Description: "every tap reads input index q+Off+1 along W (along H in a W-window kernel, whose W offsets are constants), as if the padding were off by one",
			// Reads: the kernel range-checks every input index, so a
			// shifted offset reads a neighbour or a zero, never outside x.
			// Writes do not involve Off. Wrong: a tap that reached the
			// input now reads other elements (or zeros) for its rows.
			Applies: func(p *plan.Plan) bool { return p.Tile.WGMMA == nil && anyReaching(p, allPhases(p)) },
			Apply: func(p *plan.Plan) {
				d := 2
				if p.Tile.TW() > 0 {
					d = 1
				}
				p.Taps = slices.Clone(p.Taps)
				for i := range p.Taps {
					p.Taps[i].Off[d]++
				}
			},
		},
		{
			Name:        "drop-last-tile",
			Description: "the grid stops one block short: the last M tile of the largest phase is never launched, its outputs never written",
			// Fewer blocks of the unchanged kernel run: a subset of the
			// original's accesses, all in bounds. Wrong: the dropped
			// tile's rows (at least one output position, every channel)
			// keep the verifier's NaN poison.
			Applies: func(p *plan.Plan) bool { return len(p.Phases) > 0 && droppedGrid(p) >= 1 },
			Apply: func(p *plan.Plan) {
				last := lastLargest(p)
				p.Grid[0] = droppedGrid(p)
				p.Phases = slices.Clone(p.Phases)
				p.Phases[last].Tiles--
				p.MaxTiles = 0
				for _, ph := range p.Phases {
					p.MaxTiles = max(p.MaxTiles, ph.Tiles)
				}
			},
		},
		{
			Name:        "drop-last-split",
			Description: "the grid stops one block short along z: the last group's last split_k share of the reduction never runs, its partial outputs never written",
			// Fewer blocks of the unchanged kernel run, all in bounds; the
			// sum of the splits still reads every partial output. Wrong:
			// the outputs of the last group add the workspace's
			// unwritten (poisoned) copy of the dropped split.
			Applies: func(p *plan.Plan) bool { return p.Tile.SplitK() > 1 && !p.Fold },
			Apply: func(p *plan.Plan) {
				p.Blocks[2]--
				p.Grid[2]--
			},
		},
		{
			Name:        "wrong-phase",
			Description: "two stride residues along one dimension are swapped: each of those phases writes its results at the other's output positions",
			// Only residues with the same output count Q along that
			// dimension are swapped; each phase keeps its own Q (and M), so
			// its last output R' + stride*(Q-1) is the other phase's last
			// output, inside the tensor. Wrong: the two residues' tap sets
			// are disjoint and at least one of them reaches the input.
			Applies: func(p *plan.Plan) bool { _, _, _, ok := phaseSwap(p); return ok },
			Apply: func(p *plan.Plan) {
				d, r1, r2, ok := phaseSwap(p)
				if !ok {
					return
				}
				p.Phases = slices.Clone(p.Phases)
				for i := range p.Phases {
					switch p.Phases[i].R[d] {
					case r1:
						p.Phases[i].R[d] = r2
					case r2:
						p.Phases[i].R[d] = r1
					}
				}
			},
		},
		{
			Name:        "wrong-phase-taps",
			Description: "two stride phases' tap lists are swapped: each phase accumulates the other's kernel positions and input offsets",
			// Covers what wrong-phase cannot swap in bounds (stride 2 with
			// an odd output size). Each phase keeps its residue, Q and M,
			// so the writes are the original's; the tap slices stay inside
			// the tap table and the input reads are range-checked. Wrong:
			// the two tap lists differ and one of them reaches the input.
			Applies: func(p *plan.Plan) bool { _, _, ok := tapSwap(p); return ok && p.Tile.WGMMA == nil },
			Apply: func(p *plan.Plan) {
				a, b, ok := tapSwap(p)
				if !ok {
					return
				}
				p.Phases = slices.Clone(p.Phases)
				pa, pb := &p.Phases[a], &p.Phases[b]
				pa.TapStart, pb.TapStart = pb.TapStart, pa.TapStart
				pa.TapCount, pb.TapCount = pb.TapCount, pa.TapCount
			},
		},
		{
			Name:        "wrong-tap-weight",
			Description: "every tap multiplies by the next tap's weights (flat tap index + 1, wrapping; in a W-window kernel, whose taps are kw rows, the next row's)",
			// Flat steps by a whole tap entry (a kw row in a W-window
			// kernel, which reads Flat + kw for kw < KW) and wraps, so the
			// weight reads stay inside the re-laid-out weight. Wrong: each
			// reaching tap now uses another kernel position's weights.
			Applies: func(p *plan.Plan) bool {
				return p.Conv.Taps() > p.TapWidth() && anyReaching(p, allPhases(p))
			},
			Apply: func(p *plan.Plan) {
				p.Taps = slices.Clone(p.Taps)
				for i := range p.Taps {
					p.Taps[i].Flat = (p.Taps[i].Flat + p.TapWidth()) % p.Conv.Taps()
				}
			},
		},
		{
			Name:        "skip-bias",
			Description: "the epilogue leaves the bias out",
			// The kernel only stops reading bias. The problem (inputs,
			// reference) is still the original one with bias, so every
			// output is off by its channel's bias.
			Applies: func(p *plan.Plan) bool { return p.Epilogue.Bias },
			Apply:   func(p *plan.Plan) { p.Epilogue.Bias = false },
		},
	}
}

// RenderCUDA renders the cuda.py of a (mutated) plan through the normal
// renderer and templates, for the cuda backend alone: a mutant breaks
// invariants that other backends' views check (the Triton view derives the
// weight tap from the kernel indices and refuses a Flat that disagrees).
func RenderCUDA(r *gen.Renderer, p *plan.Plan, specPath string) ([]byte, error) {
	s := *p.Spec
	s.Kernel.Backends = []string{"cuda"}
	c := *p
	c.Spec = &s
	files, err := r.Render([]*plan.Plan{&c}, specPath)
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		if strings.HasSuffix(f.Path, "/cuda."+p.Target.Name+".py") {
			return f.Data, nil
		}
	}
	return nil, errors.New("rendering gave no cuda file")
}

// For lists the mutations that apply to p.
func For(p *plan.Plan) []Mutation {
	var out []Mutation
	for _, m := range All() {
		if m.Applies(p) {
			out = append(out, m)
		}
	}
	return out
}

// Lookup finds a mutation by name.
func Lookup(name string) (Mutation, bool) {
	for _, m := range All() {
		if m.Name == name {
			return m, true
		}
	}
	return Mutation{}, false
}

func allPhases(p *plan.Plan) []int {
	idx := make([]int, len(p.Phases))
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// anyReaching reports whether some tap of the listed phases reads at least
// one input element: in every dimension some q in [0, Q) has q+Off inside
// the input (along W in a W-window kernel, whose taps are kw rows, some kw
// of some output). Without one, the phases' outputs are their bias
// whatever the taps say.
func anyReaching(p *plan.Plan, phases []int) bool {
	dims := 3
	if p.Tile.TW() > 0 {
		if !windowReaches(p) {
			return false
		}
		dims = 2
	}
	for _, i := range phases {
		ph := p.Phases[i]
		for _, t := range p.Taps[ph.TapStart : ph.TapStart+ph.TapCount] {
			ok := true
			for d := range dims {
				ok = ok && t.Off[d]+ph.Q[d] > 0 && t.Off[d] < p.Conv.In[d]
			}
			if ok {
				return true
			}
		}
	}
	return false
}

// windowReaches reports whether some output along W reads an input
// element through some kw: w + padding - kw*dilation is a multiple of the
// stride whose quotient is inside the input.
func windowReaches(p *plan.Plan) bool {
	c := p.Conv
	for w := range p.Out[2] {
		for kw := range c.Kernel[2] {
			v := w + c.Padding[2] - kw*c.Dilation[2]
			if v >= 0 && v%c.Stride[2] == 0 && v/c.Stride[2] < c.In[2] {
				return true
			}
		}
	}
	return false
}

// lastLargest is the index of the last phase with the most M tiles.
func lastLargest(p *plan.Plan) int {
	last := 0
	for i, ph := range p.Phases {
		if ph.Tiles == p.MaxTiles {
			last = i
		}
	}
	return last
}

// droppedGrid is grid x without the block of the largest phase's last
// tile: block x runs phase x mod P, tile x / P, so the blocks from
// (MaxTiles-1)*P + last on are the last tile row from that phase on; the
// phases after it have fewer tiles and lose nothing. A wgmma block runs
// tile x of every phase: the last block is the last tile row.
func droppedGrid(p *plan.Plan) int {
	if p.Tile.WGMMA != nil {
		return p.WGMMA.Tiles - 1
	}
	return (p.MaxTiles-1)*len(p.Phases) + lastLargest(p)
}

// phaseSwap picks the residues to swap: the first dimension d (D or H in a
// W-window kernel) with two
// residues r1 < r2 that have the same positive output count and whose
// phases include a tap that reaches the input.
func phaseSwap(p *plan.Plan) (d, r1, r2 int, ok bool) {
	for d := range 3 {
		if d == 2 && p.Tile.TW() > 0 {
			break // a W-window kernel's phases split D and H only
		}
		s := p.Conv.Stride[d]
		q := func(r int) int { return (max(0, p.Out[d]-r) + s - 1) / s }
		for r1 := 0; r1 < s; r1++ {
			for r2 := r1 + 1; r2 < s; r2++ {
				if q(r1) == 0 || q(r1) != q(r2) {
					continue
				}
				var phases []int
				for i, ph := range p.Phases {
					if ph.R[d] == r1 || ph.R[d] == r2 {
						phases = append(phases, i)
					}
				}
				if anyReaching(p, phases) {
					return d, r1, r2, true
				}
			}
		}
	}
	return 0, 0, 0, false
}

// tapSwap picks the phases whose tap lists to swap: the first phase with a
// tap that reaches the input, and the first phase after it (cyclically)
// whose tap list is a different one.
func tapSwap(p *plan.Plan) (a, b int, ok bool) {
	taps := func(i int) []plan.Tap {
		ph := p.Phases[i]
		return p.Taps[ph.TapStart : ph.TapStart+ph.TapCount]
	}
	for a := range p.Phases {
		if !anyReaching(p, []int{a}) {
			continue
		}
		for k := 1; k < len(p.Phases); k++ {
			b := (a + k) % len(p.Phases)
			if !slices.Equal(taps(a), taps(b)) {
				return a, b, true
			}
		}
		return 0, 0, false
	}
	return 0, 0, false
}
