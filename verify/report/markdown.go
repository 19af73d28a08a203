package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/verify/gpu"
)

// PlotFile is the plot's name beside REPORT.md.
const PlotFile = "speedup.svg"

// Write renders REPORT.md, report.json and the plot into outDir.
func Write(r *Report, outDir string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	for name, content := range map[string][]byte{
		"REPORT.md":   []byte(Markdown(r)),
		"report.json": append(data, '\n'),
		PlotFile:      []byte(Plot(r)),
		ZooPlotFile:   []byte(ZooPlot(r)),
	} {
		if err := os.WriteFile(filepath.Join(outDir, name), content, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func ms(t *Times) string {
	if t == nil {
		return "–"
	}
	return fmt.Sprintf("%.3f / %.3f", t.Mean, t.Median)
}

func sci(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.1e", *v)
}

func yes(b *bool) string {
	switch {
	case b == nil:
		return "–"
	case *b:
		return "yes"
	}
	return "no"
}

func ratio(v float64) string {
	if v == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2fx", v)
}

// Markdown renders the report page.
func Markdown(r *Report) string {
	var b strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("# GPU report\n\n")
	p("Measured on **%s** (driver %s), torch %s, CUDA %s, cuDNN %s, on %s, commit `%s`.\n", r.GPU, r.Driver, r.Torch, r.CUDA, r.CuDNN, r.Date, r.Commit)
	p("Method: the KernelBench evaluator's (seeded init, 5 trials of fresh inputs, CUDA events, 3 warm-ups,\n")
	p("100 timed runs after an L2 flush, mean reported; median shown too). Error is the relative L2 error\n")
	p("against float64 (gate 1e-5); allclose is against PyTorch's default (TF32) reference. Every problem of the\n")
	p("convolution alone has a CUDA and a Triton file per target: sm80 (A100) and sm90 (H100/H200); these numbers\n")
	p("are from the GPU named above.\n%s; Triton compiles for the GPU it runs on, so a Triton sm80 row on a\n", sm80PTX)
	p("later GPU is not the A100's code, only the sm80 file's choices.\n")
	if slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Untargeted }) {
		p("Results that name no target predate the per-target files: they are the sm90 rows (the CUDA files ran\n")
		p("their sm_90a code on the H200), and the sm80 rows are not yet measured.\n")
	}
	ceilings := geom.CeilingsOf(r.GPU)
	p("Floors: max(FLOPs / peak, bytes / %g TB/s), peak %g TFLOP/s for fp32 FFMA and %g/3 TFLOP/s for 3xTF32\n",
		ceilings.BW/1e12, ceilings.FFMA/1e12, 3*ceilings.TF32x3/1e12)
	p("(%g/3, mma.sync's measured rate, for the sm80 CUDA files, which have no wgmma); \"floor\" is floor time / our time.\n\n",
		3*ceilings.MMASync().TF32x3/1e12)
	p("![speedup over PyTorch default and fraction of floor](%s)\n\n", PlotFile)
	p("## The convolution alone: per problem, backend and target\n\n")
	p("| problem | backend | target | precision | result | rel L2 vs fp64 | allclose 1e-2 / 1e-4 | ms mean / median | PyTorch default ms | PyTorch strict fp32 ms | vs default | vs strict | floor ms | floor | kernel-only ms | registers, spill bytes (the target's cubin) |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range r.Rows {
		if row.Disposition == NotMeasured {
			p("| %s | %s | %s | %s | %s | – | – / – | – | – | – | – | – | %.3f | – | – | – |\n", row.Spec, row.Backend, row.Target, row.Precision, NotMeasured, row.FloorMS)
			continue
		}
		kernel, regs := "–", "–"
		if row.KernelMS > 0 {
			kernel = fmt.Sprintf("%.3f", row.KernelMS)
		}
		if a, ok := targetArch(row.Arch, row.Target); ok {
			regs = fmt.Sprintf("%d, %d", a.Registers, a.SpillBytes)
		}
		p("| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %.3f | %s | %s | %s |\n",
			row.Spec, row.Backend, row.Target, row.Precision, status(row), sci(row.MaxRelL2), yes(row.Allclose1e2), yes(row.Allclose1e4),
			ms(row.TimeMS), ms(row.RefDefaultMS), ms(row.RefStrictMS), ratio(row.SpeedupTF32), ratio(row.SpeedupStrict), row.FloorMS, floorFraction(row), kernel, regs)
	}
	p("\n")
	olderFiles(&b, r.Rows)
	if slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Regression }) {
		p("Rows of `%s` keep fixed bugs fixed (shapes of microseconds): listed, not counted below.\n\n", RegressionFolder)
	}
	for _, backend := range sortedKeys(r.GeoMean) {
		p("Geometric-mean speedup over PyTorch default, %s: **%.2fx**.\n", backend, r.GeoMean[backend])
	}
	for _, t := range sortedKeys(r.BestGeoMean) {
		p("Best backend per problem, %s: geometric mean **%.2fx** over the default.\n", t, r.BestGeoMean[t])
	}
	notPassed(&b, r.Rows)
	level2Markdown(&b, r)
	zooMarkdown(&b, r)
	if len(r.Sweeps) > 0 {
		p("\n## Random configurations\n\n")
		p("Random valid configurations (gen.RandomSpec: stride 1-5, dilation 1-3, strides sharing a factor with the\n")
		p("dilation, kernel 1-5, padding, output_padding, groups and depthwise, bias, odd and prime sizes, random tiles,\n")
		p("precisions and Triton options, a target each), rendered, compiled for their target (a spill fails; runs before\n")
		p("the per-target files compiled every kernel for sm_80 and sm_90), run and checked against float64 by the kernel\n")
		p("verifier (`bin/verify -random N`);\n")
		p("\"end to end\" rows: the same kind of configurations run as submissions by the harness (`--sweep`).\n\n")
		if len(r.SweepRuns) > 0 {
			p("Runs:\n\n- %s\n\n", strings.Join(r.SweepRuns, "\n- "))
		}
		p("| backend | configurations | passed | max rel L2 vs fp64 |\n|---|---|---|---|\n")
		for _, s := range r.Sweeps {
			p("| %s | %d | %d | %.1e |\n", s.Backend, s.Configs, s.Passed, s.MaxRelL2)
		}
		for _, s := range r.Sweeps {
			for _, f := range s.Failures {
				p("- %s\n", f)
			}
		}
	}
	if b := r.Big; b != nil {
		p("\n## Tensors of 2^31 elements or more\n\n")
		p("`verify/harness/bigcheck.py` over `make big` (verify/testdata/big) on %s, %s, torch %s, commit `%s`: each\n", b.GPU, b.Date, b.Torch, b.Commit)
		p("output NaN-poisoned before the forward, then checked for NaN everywhere and sampled against a float64 direct sum.\n\n")
		p("| configuration | backend | output elements | poisoned | no NaN left | samples | off | max error | result |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, x := range b.Results {
			result := "passed"
			if !x.OK {
				result = "failed: " + firstLine(x.Error)
			}
			backend := x.Backend
			if x.Target != "" {
				backend += " " + x.Target
			}
			p("| %s | %s | %d | %t | %t | %d | %d | %.1e | %s |\n", x.Spec, backend, x.OutputElements, x.Poisoned, x.NaNFree, x.Samples, x.Bad, x.MaxErr, result)
		}
	}
	if m := r.Mutation; m != nil {
		p("\n## Mutation check\n\n")
		p("Kernels rendered from plans with planted bugs (`bin/verify -mutate`, `gen/mutate`), run on the GPU\n")
		p("on %s at commit `%s`: **caught %d of %d** (reported incorrect).\n\n", m.Date, m.Commit, m.Caught, m.Planted)
		p("| planted bug | caught |\n|---|---|\n")
		for _, name := range sortedCounts(m.ByMutation) {
			p("| %s | %d |\n", name, m.ByMutation[name])
		}
		for _, k := range m.Missed {
			p("- missed: %s (%s) %s\n", k.Spec, k.Disposition, firstLine(k.Reason))
		}
	}
	if len(r.Tuning) > 0 {
		p("\n## Tuning candidates (kernel verifier, kernel-only times)\n\n")
		p("From the runs of %s. A candidate's kernel is what its tile rendered at that commit (the tile as the verifier recorded it; – for runs that did not record it).\n\n", strings.Join(r.TuningRuns, " and "))
		p("| candidate | target | precision | tile | threads | result | rel L2 | ms mean / median | registers |\n|---|---|---|---|---|---|---|---|---|\n")
		for _, t := range r.Tuning {
			rel, time := "–", "–"
			if t.RelL2 != nil {
				rel = fmt.Sprintf("%.1e", float64(*t.RelL2))
			}
			if t.Time != nil {
				time = fmt.Sprintf("%.3f / %.3f", t.Time.MeanMS, t.Time.MedianMS)
			}
			tile := t.Tile
			if tile == "" {
				tile = "–"
			}
			target := targetOf(t.Target)
			a, _ := targetArch(t.Arch, target)
			p("| %s | %s | %s | %s | %d | %s | %s | %s | %d |\n", t.Spec, target, t.Precision, tile, t.Threads, t.Disposition, rel, time, a.Registers)
		}
	}
	return b.String()
}

// sm80PTX is how the sm80 CUDA rows measured on a later GPU ran, for both
// sections.
const sm80PTX = "An sm80 CUDA file runs on a later GPU as compute_80 PTX that the driver compiles\n(the sm_80 code path, not the A100's timing)"

// status is a row's result with how it ran where that is not its
// target's own code, and whether the file measured is older than out/'s.
func status(row Row) string {
	s := row.Disposition
	if row.Ran != "" {
		s += " (" + row.Ran + ")"
	}
	if row.OlderFile {
		s += " (older file)"
	}
	if row.FromE2E {
		s += " (e2e run)"
	}
	return s
}

// compileMS is a row's torch.compile time, marked † when an earlier run
// timed it.
func compileMS(row Row) string {
	if row.CompileFrom != "" && row.RefCompileMS != nil {
		return ms(row.RefCompileMS) + " †"
	}
	return ms(row.RefCompileMS)
}

func floorFraction(row Row) string {
	if row.FloorFraction > 0 {
		return fmt.Sprintf("%.0f%%", 100*row.FloorFraction)
	}
	return "–"
}

// olderFiles explains the (older file) mark where a row has it.
func olderFiles(b *strings.Builder, rows []Row) {
	if slices.ContainsFunc(rows, func(row Row) bool { return row.OlderFile }) {
		b.WriteString("Rows marked (older file) were measured on code that has changed since (a spec edited or retuned, or the generator changed): their precision and floor are the current spec's.\n\n")
	}
}

// notPassed lists the rows that ran and did not pass, a reason's first
// line each.
func notPassed(b *strings.Builder, rows []Row) {
	var failed []string
	for _, row := range rows {
		if row.Disposition != "passed" && row.Disposition != NotMeasured {
			failed = append(failed, fmt.Sprintf("- %s (%s %s): %s — %s", row.Spec, row.Backend, row.Target, row.Disposition, firstLine(row.Reason)))
		}
	}
	if len(failed) > 0 {
		fmt.Fprintf(b, "\nNot passed:\n%s\n", strings.Join(failed, "\n"))
	}
}

// level2Markdown renders the level-2 section: its run, how its floors
// count, a row per file and a summary line per backend and target.
func level2Markdown(b *strings.Builder, r *Report) {
	l2 := r.Level2
	if len(l2.Rows) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n## Level 2: the convolution and the ops after it\n\n")
	if l2.Date != "" {
		p("Measured on **%s** (driver %s), torch %s, CUDA %s, cuDNN %s, on %s\n", l2.GPU, l2.Driver, l2.Torch, l2.CUDA, l2.CuDNN, l2.Date)
		p("(`level2.json`, from `verify/gpu-check.sh level2`), the evaluator's method as above.\n")
	} else {
		p("No level-2 run yet (`verify/gpu-check.sh level2` writes `level2.json`).\n")
	}
	p("Each problem's reference is timed in the same run three ways: eager (PyTorch's default, TF32 convolutions:\n")
	p("what KernelBench times), strict fp32, and `torch.compile` (Inductor's default mode, which fuses the ops after\n")
	p("the convolution and leaves the convolution to cuDNN).)\n%s.\n", sm80PTX)
	if !slices.ContainsFunc(l2.Rows, func(row Row) bool { return row.Backend == "triton" }) {
		p("No Triton rows: these specs list `backends: [cuda]`, or the Triton backend cannot express their ops yet\n")
		p("(each CUDA file's docstring says which; specs/README.md).\n")
	}
	p("Floor: max(the convolution's FLOPs / the file's precision's peak, bytes / bandwidth), the peaks above and\n")
	p("%g TB/s of device memory for this GPU (a\n", geom.CeilingsOf(l2.GPU).BW/1e12)
	p("spectral file computes no convolution: its own FLOPs at the fp32 rate); the\n")
	p("bytes are what the fused forward must move: its input read once, the weight and bias, the other tensors it\n")
	p("reads (parameters, a second input), the final output written once, and no intermediate tensor.\n\n")
	p("| problem | backend | target | precision | result | rel L2 vs fp64 | allclose 1e-2 / 1e-4 | ms mean / median | eager ms | strict fp32 ms | torch.compile ms | vs eager | vs torch.compile | floor ms | floor |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, row := range l2.Rows {
		p("| %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s | %s | %.3f | %s |\n",
			row.Spec, row.Backend, row.Target, row.Precision, status(row), sci(row.MaxRelL2), yes(row.Allclose1e2), yes(row.Allclose1e4),
			ms(row.TimeMS), ms(row.RefDefaultMS), ms(row.RefStrictMS), compileMS(row), ratio(row.SpeedupTF32), ratio(row.SpeedupCompile), row.FloorMS, floorFraction(row))
	}
	p("\n")
	if i := slices.IndexFunc(l2.Rows, func(row Row) bool { return row.CompileFrom != "" }); i >= 0 {
		p("† torch.compile timed in an earlier run (`level2-compile.json`, %s) on the same GPU model, beside that\n", l2.Rows[i].CompileFrom)
		p("run's own eager times; the run of these rows timed eager and strict fp32 only.\n\n")
	}
	olderFiles(b, l2.Rows)
	if len(l2.NoTriton) > 0 {
		p("No Triton file (the spec leaves the backends open, and the Triton backend cannot express the forward yet):\n\n")
		for _, n := range l2.NoTriton {
			p("- %s: %s\n", n.Spec, n.Why)
		}
		p("\n")
	}
	if slices.ContainsFunc(l2.Rows, func(row Row) bool { return row.FromE2E }) {
		p("Rows marked (e2e run) are from the run named at the top (`e2e.json`), which timed no `torch.compile`.\n\n")
	}
	for _, s := range l2.Summary {
		p("- %s %s: %d of %d passed", s.Backend, s.Target, s.Passed, s.Files)
		if s.NotMeasured > 0 {
			p(", %d not yet measured", s.NotMeasured)
		}
		if s.VsEager > 0 {
			p("; over eager **%.2fx** (geometric mean), faster on %d of %d", s.GeoMeanEager, s.BeatEager, s.VsEager)
		}
		if s.VsCompile > 0 {
			p("; over torch.compile **%.2fx**, faster on %d of %d", s.GeoMeanCompile, s.BeatCompile, s.VsCompile)
		}
		p(".\n")
	}
	for _, t := range sortedKeys(l2.Best) {
		b := l2.Best[t]
		p("- the faster backend per problem, %s: over eager **%.2fx** (geometric mean over %d problems), faster on %d of %d; faster than torch.compile on **%d of %d** timed.\n",
			t, b.GeoMean, b.Problems, b.BeatEager, b.Problems, b.BeatCompile, b.WithCompile)
	}
	notPassed(b, l2.Rows)
}

// Plot draws, per problem and target, the best backend's speedup over the PyTorch
// default (log scale bars) and its fraction of the floor, as SVG.
func Plot(r *Report) string {
	const w, rowH, left = 820, 28, 330
	h := 60 + rowH*len(r.Best)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14">Best backend per problem and target: speedup over PyTorch default (log bars, line at 1x), fraction of floor</text>`+"\n")
	const perDoubling = 60.0              // px per doubling of the speedup
	zero := float64(left) + 2*perDoubling // bars reach down to 0.25x
	// Bars reach up to where their label still fits inside the picture.
	scale := func(s float64) float64 {
		return math.Min(perDoubling*math.Log2(math.Max(s, 0.25)), w-zero-170)
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="30" x2="%.0f" y2="%d" stroke="black"/>`+"\n", zero, zero, h-10)
	for i, row := range r.Best {
		y := 36 + i*rowH
		x := zero + math.Min(0, scale(row.SpeedupTF32))
		wd := math.Abs(scale(row.SpeedupTF32))
		color := "#2a9d8f"
		if row.SpeedupTF32 < 1 {
			color = "#e76f51"
		}
		fmt.Fprintf(&b, `<text x="10" y="%d">%s (%s %s)</text>`+"\n", y+14, row.Spec, row.Backend, row.Target)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="%.0f" height="18" fill="%s"/>`+"\n", x, y, wd, color)
		fmt.Fprintf(&b, `<text x="%.0f" y="%d">%.2fx, %.0f%% of floor</text>`+"\n", zero+math.Max(0, scale(row.SpeedupTF32))+6, y+14, row.SpeedupTF32, 100*row.FloorFraction)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func sortedCounts(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// targetArch is a kernel's compile for its target: sm_80 for sm80; for
// sm90 sm_90a, or plain sm_90 in runs that built that (before the
// per-target files).
func targetArch(arch map[string]gpu.ArchInfo, target string) (gpu.ArchInfo, bool) {
	names := []string{plan.SM90.Arch, "sm_90"}
	if target == plan.SM80.Name {
		names = []string{plan.SM80.Arch}
	}
	for _, n := range names {
		if a, ok := arch[n]; ok {
			return a, true
		}
	}
	return gpu.ArchInfo{}, false
}
