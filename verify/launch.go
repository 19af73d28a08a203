package verify

import "convtgen/gen/plan"

// KernelFromPlan is the Kernel the generator's registry lists for a planned
// spec whose CUDA submission is file (a path the verifier can read, relative
// to the repository root for out/ files). It copies the same fields
// gen/registry.go prints, so a spec planned on the fly (a random
// configuration, a spec file named on the command line) launches exactly
// like a registered one.
func KernelFromPlan(p *plan.Plan, file string) Kernel {
	c := p.Conv
	return Kernel{
		Spec:      p.Spec.Name,
		SpecPath:  p.Spec.Path,
		File:      file,
		Function:  p.Names.Kernel,
		Repack:    p.Names.Repack,
		Grid:      p.Grid,
		Threads:   p.Threads,
		SmemBytes: p.SmemBytes,
		Precision: p.Spec.Kernel.Precision,
		Conv:      c,
		Out:       p.Out,
		FLOPs:     c.FLOPs(),
		MinBytes:  c.MinBytes(),
	}
}
