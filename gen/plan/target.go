package plan

import (
	"fmt"

	"convtgen/gen/geom"
)

// Target is a GPU a submission is generated for: its compute capability,
// how nvcc builds for it, and the limits a plan must respect there. Every
// spec renders one submission per backend and target.
type Target struct {
	Name         string // "sm80": the spec's per-target section and the file suffix (cuda.sm80.py)
	GPU          string // the GPU it stands for, for docstrings and reports
	Major, Minor int    // the compute capability a CUDA file accepts (sm80: at least; sm90: exactly)
	// Gencode is nvcc's -gencode for the CUDA files: sm80 also embeds
	// compute_80 PTX, so the file runs on later GPUs (on an H200 that is
	// how the sm80 code is measured); sm90 builds sm_90a, whose wgmma and
	// bulk copies exist on no other architecture.
	Gencode string
	// Arch is the verifier's nvcc -arch for the same code.
	Arch string
	// SMs: the GPU's streaming multiprocessors (an H200's and an H100
	// SXM's alike).
	SMs int
	// SmemPerSM is the shared memory an SM holds; SmemPerBlock what one
	// block may opt in to.
	SmemPerSM, SmemPerBlock int
	// WGMMA: warpgroup products (wgmma.mma_async) and bulk copies
	// (cp.async.bulk). Without them a wgmma tile computes its products by
	// mma.sync from the same fragments and loads its weights by cp.async.
	WGMMA bool
}

var (
	// SM80 is the A100 (the seed's GPU): 164 KiB of shared memory an SM
	// and 163 KiB a block, 108 SMs, no wgmma or TMA.
	SM80 = Target{Name: "sm80", GPU: "A100", Major: 8, Minor: 0,
		Gencode: "arch=compute_80,code=[sm_80,compute_80]", Arch: "sm_80", SMs: 108,
		SmemPerSM: 164 * 1024, SmemPerBlock: 163 * 1024}
	// SM90 is the H100/H200: 228 KiB of shared memory an SM and 227 KiB a
	// block, 132 SMs, wgmma and TMA.
	SM90 = Target{Name: "sm90", GPU: "H100/H200", Major: 9, Minor: 0,
		Gencode: "arch=compute_90a,code=sm_90a", Arch: "sm_90a", SMs: 132,
		SmemPerSM: 228 * 1024, SmemPerBlock: 227 * 1024, WGMMA: true}
)

// Targets are every target a spec renders for, in file order.
var Targets = []Target{SM80, SM90}

// TargetNamed is the target of a name ("sm80", "sm90").
func TargetNamed(name string) (Target, error) {
	for _, t := range Targets {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("target %q: want one of sm80, sm90", name)
}

// Exact reports whether a CUDA file for t runs only on its own compute
// capability (sm_90a code runs nowhere else); otherwise on t's and later.
func (t Target) Exact() bool { return t.WGMMA }

// CC is the compute capability as text: "8.0".
func (t Target) CC() string { return fmt.Sprintf("%d.%d", t.Major, t.Minor) }

// Ceilings are g's as a file of backend for t can reach them: a CUDA file
// for a target without wgmma computes 3xTF32 by mma.sync, at its rate (a
// Triton file compiles for the GPU it runs on).
func (t Target) Ceilings(g geom.Ceilings, backend string) geom.Ceilings {
	if backend == "cuda" && !t.WGMMA {
		return g.MMASync()
	}
	return g
}
