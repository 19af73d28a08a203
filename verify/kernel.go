// Package verify checks emitted submissions: static rules here (pure Go),
// the GPU tiers in the cgo command behind the "cuda" build tag.
package verify

import "convtgen/gen/geom"

// Kernel is one spec's CUDA kernel and how to launch it, as the generator
// planned it. The generator writes the list of them (kernels_gen.go), so
// the verifier never re-derives shapes or grids.
type Kernel struct {
	Spec      string // spec name, the folder under out/
	SpecPath  string // spec file, relative to the repository root
	File      string // emitted CUDA submission, relative to the repository root
	Function  string // main kernel's name
	Repack    string // weight re-layout kernel's name, launched first
	Grid      [3]int
	Threads   int
	SmemBytes int
	Precision string
	Conv      geom.Conv
	Out       [3]int
	FLOPs     float64
	MinBytes  float64
}
