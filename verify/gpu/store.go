package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
)

// Store is what a level-2 kernel's store applies after the convolution
// and its bias: the forward's leading pointwise ops (plan.Epilogue.Ops),
// reading the tensors of its parameters after the bias. The kernel's
// output is those ops of the convolution, so the check applies them to
// the float64 reference too, with the tensors the run draws (Extras).
type Store struct {
	Ops []plan.PointOp `json:"ops"`
	// Args are the chain's extras index of each tensor parameter, in
	// parameter order (plan.Epilogue.Extras): an op's Arg is found here.
	Args []int `json:"args"`
}

// StoreOf is the store of p's kernel, nil when it writes the convolution.
func StoreOf(p *plan.Plan) *Store {
	if p == nil || len(p.Epilogue.Ops) == 0 {
		return nil
	}
	s := &Store{Ops: p.Epilogue.Ops}
	for _, e := range p.Epilogue.Extras {
		s.Args = append(s.Args, e.Arg)
	}
	return s
}

// MakeExtras draws the store's tensors of the given lengths (the launch
// record's StoreExtras, 0 past the last) from U[0.5, 1.5): away from zero,
// so a tensor that divides or scales keeps the output's magnitude.
func MakeExtras(lens [plan.MaxStoreExtras]int, seed uint64) [][]float32 {
	var extras [][]float32
	for k, n := range lens {
		if n == 0 {
			break
		}
		e := make([]float32, n)
		fill(e, seed, 4+uint64(k), func(r *rand.Rand) float32 { return float32(0.5 + r.Float64()) })
		extras = append(extras, e)
	}
	return extras
}

// Apply is the store's output for the convolution's value v (bias
// included) at flat output index i of c, in float64.
func (s *Store) Apply(c geom.Conv, extras [][]float32, v float64, i int) (float64, error) {
	if s == nil {
		return v, nil
	}
	conv := v
	channel := i / (c.OutputLen() / c.Batch / c.OutChannels) % c.OutChannels
	for _, op := range s.Ops {
		b := op.Num
		switch {
		case op.Conv:
			b = conv
		case op.Arg >= 0:
			k := slices.Index(s.Args, op.Arg)
			if k < 0 || k >= len(extras) {
				return 0, fmt.Errorf("store op %s reads extra %d, which the store has no tensor for", op.Kind, op.Arg)
			}
			e, at := extras[k], 0
			switch {
			case op.PerChannel:
				at = channel
			case op.Elementwise:
				at = i
			}
			if at >= len(e) {
				return 0, fmt.Errorf("store op %s reads extra %d at %d of %d", op.Kind, op.Arg, at, len(e))
			}
			b = float64(e[at])
		}
		if r, ok := ref.Arith(op.Kind, v, b); ok {
			v = r
			continue
		}
		if r, ok := ref.Activation(op.Kind, v, op.Slope, op.Shift, op.Div); ok {
			v = r
			continue
		}
		if op.Kind != "clamp" {
			return 0, fmt.Errorf("store op %s has no reference", op.Kind)
		}
		if op.Min != nil {
			v = math.Max(v, *op.Min)
		}
		if op.Max != nil {
			v = math.Min(v, *op.Max)
		}
	}
	return v, nil
}
