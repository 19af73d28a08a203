// Package choose picks a spec's kernel where the spec leaves it open: for
// each backend and target, every feasible candidate of the tuning space
// (space.go) is planned and its time estimated by the cost model
// (model.go), and the cheapest is taken.
//
// What a spec gives is kept. A backend's choice is open when it sets no
// tiling number: no CUDA family at all (every family is a candidate), a
// family with no numeric option (its own candidates, with the flags the
// spec sets), a Triton section with no numeric field (its candidates, with
// the precision and flags the spec sets). A choice with any numeric
// option is the spec's, its other options the plan's defaults as before.
package choose

import (
	"reflect"
	"slices"
	"sort"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// Options are what the chooser needs from the generator.
type Options struct {
	// Triton lays out a Triton choice for a plan whose spec holds it: the
	// choice with every field set, and its shape for the model. Nil: the
	// Triton choice is left as the spec gives it.
	Triton func(p *plan.Plan) (spec.Triton, TritonShape)
}

// Ranked is one candidate with its estimate.
type Ranked struct {
	Backend  string
	CUDA     spec.Family // the candidate as listed (cuda)
	Triton   spec.Triton // the candidate as listed (triton)
	Resolved string      // the choice as the plan resolves it, in the spec's form
	Estimate Estimate
}

// Decision is what the chooser did for one target: each open backend's
// candidates, cheapest first (the first one taken); nil where the spec's
// choice is kept.
type Decision struct {
	Target       plan.Target
	CUDA, Triton []Ranked
	// Refused: the problem is refused whatever the kernel (the plan's
	// errors of the spec's own CUDA choice, none about a kernel option).
	Refused error
}

// Choose returns the spec with the target's open choices filled (in its
// kernel.<target> section) and what it decided. Where no candidate is
// feasible the choice stays open, and planning the spec reports why.
func (o Options) Choose(s *spec.Spec, t plan.Target) (*spec.Spec, Decision) {
	d := Decision{Target: t}
	k := s.Kernel.For(t.Name)
	var picked spec.TargetKernel
	if slices.Contains(k.Backends, "cuda") {
		ts := *s
		ts.Kernel = k
		if cands := cudaOpen(k.CUDA, plan.CUDAConv(&ts)); cands != nil {
			if t.WGMMA {
				cands = withBulkTwins(cands)
			}
			if d.CUDA, d.Refused = rankCUDA(s, t, cands); d.Refused != nil {
				return s, d
			}
			if len(d.CUDA) > 0 {
				picked.CUDA = &spec.CUDA{Family: d.CUDA[0].CUDA}
			}
		}
	}
	if o.Triton != nil && slices.Contains(k.Backends, "triton") && tritonOpen(k.Triton) {
		d.Triton = o.rankTriton(s, t, k.Triton)
		if len(d.Triton) > 0 {
			picked.Triton = &d.Triton[0].Triton
		}
	}
	if picked.CUDA == nil && picked.Triton == nil {
		return s, d
	}
	out := *s
	out.Kernel.Targets = map[string]spec.TargetKernel{}
	for name, tk := range s.Kernel.Targets {
		out.Kernel.Targets[name] = tk
	}
	tk := out.Kernel.Targets[t.Name]
	if picked.CUDA != nil {
		tk.CUDA = picked.CUDA
	}
	if picked.Triton != nil {
		tk.Triton = picked.Triton
	}
	out.Kernel.Targets[t.Name] = tk
	return &out, d
}

// cudaOpen is the CUDA candidates of an open choice, nil for a given one:
// the tuning space around it and the split tiles.
func cudaOpen(c spec.CUDA, conv geom.Conv) []spec.Family {
	space := func(own spec.Family) []spec.Family { return append(CUDASpace(conv, own), SplitKernels()...) }
	if c.Family == nil {
		return dedupe(space(spec.FFMA{}))
	}
	if hasNumber(c.Family) {
		return nil
	}
	out := []spec.Family{c.Family}
	for _, f := range space(c.Family) {
		if f.Key() == c.Family.Key() {
			out = append(out, overlay(f, c.Family))
		}
	}
	return dedupe(out)
}

// withBulkTwins is cands with, after each wgmma tile whose weight stages
// are filled by every thread's cp.async copies, the same tile filled by
// bulk copies (sm_90a): the tuning space lists bulk weights only where
// they were measured, but every tuned sm90 tile uses them and the model
// rates them faster, so the chooser weighs both.
func withBulkTwins(cands []spec.Family) []spec.Family {
	var out []spec.Family
	for _, f := range cands {
		out = append(append(out, f), BulkTwins([]spec.Family{f})...)
	}
	return dedupe(out)
}

// BulkTwins is, for each wgmma tile of fs whose weight stages are filled
// by cp.async copies, the same tile filled by bulk copies: what
// withBulkTwins adds after each, and tuning lists after its space.
func BulkTwins(fs []spec.Family) []spec.Family {
	var out []spec.Family
	for _, f := range fs {
		if w, ok := f.(spec.WGMMA); ok && !w.BulkWeights {
			w.BulkWeights = true
			out = append(out, w)
		}
	}
	return out
}

// tritonOpen: a Triton section with no numeric field.
func tritonOpen(t spec.Triton) bool { return !hasNumber(t) }

func dedupe[T comparable](xs []T) []T {
	var out []T
	for _, x := range xs {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// hasNumber reports whether an options struct sets a numeric option.
func hasNumber(opts any) bool {
	v := reflect.ValueOf(opts)
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Int && f.Int() != 0 {
			return true
		}
	}
	return false
}

// overlay is cand with every option given sets laid over it.
func overlay[T any](cand, given T) T {
	out := reflect.New(reflect.TypeOf(cand)).Elem()
	out.Set(reflect.ValueOf(cand))
	g := reflect.ValueOf(given)
	for i := range g.NumField() {
		if !g.Field(i).IsZero() {
			out.Field(i).Set(g.Field(i))
		}
	}
	return out.Interface().(T)
}

// rankCUDA plans and estimates every candidate, cheapest first (ties in
// the list's order); infeasible ones and those that resolve to a tile
// already ranked are left out. When the first candidate (the plan's
// default, or the spec's family) is refused for the problem itself
// rather than a kernel option, none other is tried and refused is its error:
// the tables or row counts that refuse it refuse the others alike, and
// planning them all would cost the time a large refused problem takes,
// many times over.
func rankCUDA(s *spec.Spec, t plan.Target, cands []spec.Family) (ranked []Ranked, refused error) {
	var out []Ranked
	for i, f := range cands {
		// Planned with the spec's backends and Triton choice, so that the
		// first candidate, the spec's own, plans as the spec does.
		sc := *s
		sc.Kernel = s.Kernel.For(t.Name)
		sc.Kernel.CUDA = spec.CUDA{Family: f}
		p, err := plan.New(&sc, t)
		if err != nil {
			if i == 0 && !KernelOnly(err) {
				return nil, err
			}
			continue
		}
		if p.MMASyncSpills() {
			continue
		}
		r := Ranked{Backend: "cuda", CUDA: f, Resolved: p.Tile.Choice().String()}
		if slices.ContainsFunc(out, func(o Ranked) bool { return o.Resolved == r.Resolved }) {
			continue
		}
		r.Estimate = EstimateCUDA(p)
		out = append(out, r)
	}
	sortRanked(out)
	return out, nil
}

// KernelOnly reports whether every error of a plan names a kernel
// option: another choice may plan where this one does not.
func KernelOnly(err error) bool {
	errs, ok := err.(spec.Errors)
	if !ok {
		return false
	}
	for _, e := range errs {
		if len(e.Field) < 7 || e.Field[:7] != "kernel." {
			return false
		}
	}
	return true
}

func sortRanked(rs []Ranked) {
	sort.SliceStable(rs, func(i, j int) bool { return rs[i].Estimate.Seconds < rs[j].Estimate.Seconds })
}

// rankTriton lays out and estimates every Triton candidate around the
// spec's own, cheapest first. One plan of the problem alone serves them
// all: the Triton view reads only the problem and the Triton choice. Choices the plan
// refuses (TritonMiscompiledAxis) are left out.
func (o Options) rankTriton(s *spec.Spec, t plan.Target, given spec.Triton) []Ranked {
	sb := *s
	sb.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: given}
	c, restrided := plan.KernelConv(s.Problem.Conv, s.Kernel.For(t.Name).CUDA.Of()) // as plan.New lays it out
	base := &plan.Plan{Spec: &sb, Target: t, Conv: c, Restrided: restrided, Out: c.Out(), CinG: c.InPerGroup(), CoutG: c.OutPerGroup()}
	layout := func(tc spec.Triton) (spec.Triton, TritonShape) {
		pc, sc := *base, *base.Spec
		sc.Kernel.Triton = tc
		pc.Spec = &sc
		return o.Triton(&pc)
	}
	own, _ := layout(given)
	cands := []spec.Triton{given}
	for _, tc := range TritonCandidates(own) {
		cands = append(cands, overlay(tc, given))
	}
	var out []Ranked
	for _, tc := range dedupe(cands) {
		res, shape := layout(tc)
		r := Ranked{Backend: "triton", Triton: tc, Resolved: res.String()}
		if slices.ContainsFunc(out, func(o Ranked) bool { return o.Resolved == r.Resolved }) {
			continue
		}
		r.Estimate = EstimateTriton(t.Name, base, shape)
		out = append(out, r)
	}
	sortRanked(out)
	return out
}
