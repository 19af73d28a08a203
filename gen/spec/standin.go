package spec

import "convtgen/gen/geom"

// standIns are two valid problems unlike each other in every field the
// plan reads, put in place of refused problem fields (see StandIns).
var standIns = [2]geom.Conv{
	{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, Kernel: [3]int{1, 1, 1}, In: [3]int{1, 1, 1},
		Stride: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1}},
	{Batch: 2, InChannels: 48, OutChannels: 40, Groups: 1, Kernel: [3]int{3, 3, 3}, In: [3]int{9, 9, 9},
		Stride: [3]int{2, 2, 2}, Dilation: [3]int{1, 1, 1}, Padding: [3]int{1, 1, 1}, OutputPadding: [3]int{1, 1, 1}},
}

// StandIns returns two copies of a spec that ParsePartial refused, its
// refused problem fields replaced by the two stand-ins' values (channels
// and groups together, and the geometry together, so that the result is
// a valid problem): the kernel section's checks that need a plan (tile
// feasibility) can run on both, and an error both give alike does not
// depend on the refused fields. Nil when the kernel section itself was
// refused.
func (s *Spec) StandIns() []*Spec {
	if s.Refused("kernel") {
		return nil
	}
	p := "problem."
	channels := s.Refused(p+"in_channels") || s.Refused(p+"out_channels") || s.Refused(p+"groups")
	shape := false
	for _, f := range []string{"kernel", "input", "stride", "dilation", "padding", "output_padding"} {
		shape = shape || s.Refused(p+f)
	}
	all := s.refused["problem"] // the section is missing, or its tensors do not fit
	var out []*Spec
	for _, in := range standIns {
		c := *s
		k := &c.Problem.Conv
		if all || s.Refused(p+"batch") {
			k.Batch = in.Batch
		}
		if all || channels {
			k.InChannels, k.OutChannels, k.Groups = in.InChannels, in.OutChannels, in.Groups
		}
		if all || shape {
			k.Kernel, k.In, k.Stride, k.Dilation, k.Padding, k.OutputPadding = in.Kernel, in.In, in.Stride, in.Dilation, in.Padding, in.OutputPadding
		}
		c.Kernel.Backends = append([]string(nil), s.Kernel.Backends...)
		out = append(out, &c)
	}
	return out
}
