package plan

import "convtgen/gen/geom"

// MinBytes is the fewest bytes the model's forward must move in fp32: its
// first input read once (as given, before any prologue), the weight and the
// bias, every other tensor the chain reads once (per-channel parameters, a
// norm's weights and running statistics, second inputs: Chain.Extras), and
// the final output written once. No intermediate tensor counts: the
// convolution's output, a norm's statistics or a pool's input could all
// stay on chip in a fully fused kernel. For the convolution alone it is
// geom.Conv.MinBytes.
func (p *Plan) MinBytes() float64 {
	ch := p.Epilogue.Chain
	if !ch.Any() {
		return p.Conv.MinBytes()
	}
	c := p.Conv
	bytes := 4 * float64(numelOf(p.Spec.Reference.Inputs[0].Shape)+c.WeightLen()+numelOf(ch.Final))
	if c.Bias {
		bytes += 4 * float64(c.OutChannels)
	}
	for _, e := range ch.Extras {
		size := 4.0
		if e.Int64() {
			size = 8
		}
		bytes += size * float64(e.Len)
	}
	return bytes
}

// FloorMS is the least time in milliseconds the forward can take at a
// precision: the convolution's FLOPs at that precision's rate or MinBytes
// at the memory bandwidth (geom.FloorMS), whichever is larger. The ops
// after the convolution add no FLOPs to it: against the convolution's
// they are a few per output element.
//
// A spectral plan computes no convolution: its floor is its own FLOPs
// (Plan.SpectralFLOPs) in fp32.
func (p *Plan) FloorMS(precision string) float64 {
	return p.floorMS(geom.H200, precision)
}

// FloorMSOn is FloorMS on the GPU of the given ceilings for the file of a
// backend, at the rates that file can reach (Target.Ceilings).
func (p *Plan) FloorMSOn(g geom.Ceilings, backend, precision string) float64 {
	return p.floorMS(p.Target.Ceilings(g, backend), precision)
}

func (p *Plan) floorMS(g geom.Ceilings, precision string) float64 {
	if p.Spectral != nil {
		return g.FloorMS(p.SpectralFLOPs(), p.MinBytes(), "fp32")
	}
	return g.FloorMS(p.Conv.FLOPs(), p.MinBytes(), precision)
}

func numelOf(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}
