package plan

import "convtgen/gen/geom"

// Launch is how to run one spec's CUDA kernel: the record the verifier
// needs, and the one place that decides which plan fields it gets (the
// generated registry and specs planned on the fly both come from here).
type Launch struct {
	Spec      string // spec name, the folder under out/
	SpecPath  string // spec file, relative to the repository root
	File      string // emitted CUDA submission
	Function  string // main kernel's name
	Repack    string // weight re-layout kernel's name, launched first
	Grid      [3]int
	Threads   int
	SmemBytes int
	Precision string
	Tile      string // the tile in spec form, as the plan resolved it
	Conv      geom.Conv
	Out       [3]int
	FLOPs     float64
	MinBytes  float64
}

// Launch returns the launch record of the plan's CUDA submission in file.
func (p *Plan) Launch(file string) Launch {
	return Launch{
		Spec:      p.Spec.Name,
		SpecPath:  p.Spec.Path,
		File:      file,
		Function:  p.Names.Kernel,
		Repack:    p.Names.Repack,
		Grid:      p.Grid,
		Threads:   p.Threads,
		SmemBytes: p.SmemBytes,
		Precision: p.Spec.Kernel.Precision,
		Tile:      p.Tile.Spec().String(),
		Conv:      p.Conv,
		Out:       p.Out,
		FLOPs:     p.Conv.FLOPs(),
		MinBytes:  p.Conv.MinBytes(),
	}
}
