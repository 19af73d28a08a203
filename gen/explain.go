package gen

import (
	"fmt"
	"io"

	"convtgen/gen/plan"
	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

// Explain prints the chooser's ranking for one spec file, per target and
// backend: the top candidates with their estimated times and the terms
// that decide them, or that the spec gives the choice itself.
func Explain(w io.Writer, path, display string, top int) error {
	data, err := safeio.ReadRegular(path, safeio.MaxSpecSize)
	if err != nil {
		return err
	}
	s, err := spec.Parse(display, data)
	if err != nil {
		return err
	}
	c := s.Problem.Conv
	fmt.Fprintf(w, "%s: %.3g GFLOP, %.3g MB moved at least, problem %s\n", display, c.FLOPs()/1e9, c.MinBytes()/1e6, ProblemHash(s, ""))
	for _, t := range plan.Targets {
		_, d := Chooser.Choose(s, t)
		k := s.Kernel.For(t.Name)
		for _, b := range k.Backends {
			rs := d.CUDA
			if b == "triton" {
				rs = d.Triton
			}
			fmt.Fprintf(w, "\n%s %s (%s):", t.Name, b, t.GPU)
			if rs == nil {
				given := k.CUDA.String()
				if b == "triton" {
					given = k.Triton.String()
				}
				fmt.Fprintf(w, " the spec's choice %s\n", given)
				continue
			}
			fmt.Fprintf(w, " %d candidates, cheapest first\n", len(rs))
			for i, r := range rs[:min(top, len(rs))] {
				fmt.Fprintf(w, "  %2d. %s\n      %s\n", i+1, r.Resolved, r.Estimate)
			}
		}
	}
	return nil
}
