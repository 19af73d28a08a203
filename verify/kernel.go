// Package verify checks emitted submissions: static rules here (pure Go),
// the GPU tiers in the cgo command behind the "cuda" build tag.
package verify

import "convtgen/gen/plan"

// Kernel is one spec's CUDA kernel and how to launch it, as the generator
// planned it. The generator writes the list of them (kernels_gen.go), so
// the verifier never re-derives shapes or grids.
type Kernel = plan.Launch

// KernelFromPlan is the Kernel of a spec planned on the fly (a random
// configuration, a spec file named on the command line), exactly as the
// registry would list it.
func KernelFromPlan(p *plan.Plan, file string) Kernel { return p.Launch(file) }
