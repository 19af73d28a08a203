package report

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify/gpu"
)

// ZooFolder holds the zoo's specs: realistic shapes generated with the
// plan's own choices, reported in a section of their own.
const ZooFolder = "specs/zoo/"

// TF32Rate is the dense TF32 tensor rate the zoo's gate reads cuDNN's
// default against: where cuDNN reaches a third of it, an exact kernel
// (three products to its one) is not asked to beat it.
const TF32Rate = 3 * geom.TF32x3FLOPS

// Zoo is the section of the zoo's specs (zoo.json, gpu-check's zoo stage;
// e2e.json's rows for files it lacks): every file's
// row, the faster of the two backends per shape and target, and a summary
// per target against the gates of the chooser's issue.
type Zoo struct {
	GPU     string       `json:"gpu,omitempty"`
	Driver  string       `json:"driver,omitempty"`
	Date    string       `json:"date,omitempty"`
	Rows    []Row        `json:"rows"`
	Best    []Row        `json:"best"` // the faster passed backend per shape and target
	Summary []ZooSummary `json:"summary"`
	Missing []string     `json:"not_measured,omitempty"` // "<spec> <target>" with no passed file
	Rivals  []ZooRivals  `json:"rivals,omitempty"`       // the CUDA choices against their timed rivals
}

// ZooSummary tallies one target's shapes by their faster backend.
type ZooSummary struct {
	Target      string         `json:"target"`
	Shapes      int            `json:"shapes"`
	Measured    int            `json:"measured"`     // shapes with a passed file and the reference's times
	BeatStrict  int            `json:"beat_strict"`  // at least as fast as strict-fp32 cuDNN
	SlowDefault int            `json:"slow_default"` // shapes where cuDNN's default runs under TF32Rate/3
	BeatDefault int            `json:"beat_default"` // of those, at least as fast as it
	GeoMean     float64        `json:"geomean_speedup_vs_default,omitempty"`
	Backends    map[string]int `json:"faster_backend"` // shapes won per backend
	// BeyondPeak are the shapes slower than a slow default where it runs
	// faster than ExactPeak, 3xTF32 on the target's CUDA code path: there
	// no exact kernel for the target can match it.
	BeyondPeak []string `json:"beyond_exact_peak,omitempty"`
	ExactPeak  float64  `json:"exact_peak_flops,omitempty"`
}

func isZoo(l gen.Loaded) bool { return strings.HasPrefix(l.Path, ZooFolder) }

// RivalBound is how much slower than its fastest timed rival a zoo
// choice may be and still count as well chosen (the chooser's issue asks
// it of 90% of the zoo).
const RivalBound = 1.25

// ZooRivals is one target's zoo choices against the candidates timed
// beside them in a tuning run (`make tune UNDER=specs/zoo/ TOP=n`, then
// gpu-check's tune stage: kernel-only times).
type ZooRivals struct {
	Target string `json:"target"`
	Run    string `json:"run"`    // the tuning runs' GPU and dates
	Shapes int    `json:"shapes"` // shapes whose choice and a rival passed, timed in the runs
	Within int    `json:"within"` // of those, the choice within RivalBound of the fastest
	Worst  string `json:"worst,omitempty"`
	// Untimed: shapes the runs timed, but never with today's choice (the
	// chooser has moved to a tile no run timed, or it failed).
	Untimed []string `json:"untimed,omitempty"`
}

// candidateOf is the spec a kernel verifier item times: a tuning
// candidate's (an item of build/tune's spec files, named
// <spec>_<target>_t<i>), else the item's own (current: a registered spec).
func candidateOf(k gpu.Result) (spec string, current bool) {
	if !isCandidatePath(k.SpecPath) {
		return k.Spec, true
	}
	return gen.VariantSpec(k.Spec, k.Target), false
}

// isCandidatePath: a tuning candidate's spec file, <folder>/specs/<variant>.yaml
// in the folder convtgen tune wrote (build/tune by default, -out another).
func isCandidatePath(path string) bool {
	return strings.Contains(path, "/specs/") && !strings.HasPrefix(path, gen.SpecDir+"/")
}

// zooRivals compares every zoo spec's CUDA choice with the candidates
// timed in the tuning runs (items of build/tune's spec files, named
// <spec>_<target>_t<i>) that passed within the tuning error bound. Runs of
// one GPU model are pooled: a choice's time is that of the latest item
// with its tile (its registry item, or a candidate of the same tile when
// the chooser has moved to it since), so a run over part of the zoo adds
// to an earlier one, and a choice never timed counts in Untimed.
func zooRivals(byName map[string]gen.Loaded, runs []*gpu.Report) []ZooRivals {
	type key struct{ spec, target string }
	type timed struct {
		ms   float64
		date string
	}
	var gpus []string
	byGPU := map[string][]*gpu.Report{}
	for _, run := range runs {
		if _, ok := byGPU[run.GPU]; !ok {
			gpus = append(gpus, run.GPU)
		}
		byGPU[run.GPU] = append(byGPU[run.GPU], run)
	}
	chosen := func(name, target string) string {
		if p := planFor(byName[name], target); p != nil {
			return spec.FlatV1(p.Tile.Family())
		}
		return ""
	}
	var out []ZooRivals
	for _, g := range gpus {
		own, best := map[key]timed{}, map[key]timed{}
		bestName, rivals := map[key]string{}, map[key]int{}
		seen := map[key]bool{}
		var dates []string
		for _, run := range byGPU[g] {
			for _, k := range run.Results {
				name, _ := candidateOf(k)
				if l, ok := byName[name]; !ok || !isZoo(l) {
					continue
				}
				if !slices.Contains(dates, run.Date) {
					dates = append(dates, run.Date)
				}
				at := key{name, k.Target}
				seen[at] = true
				if k.Disposition != gpu.Passed || k.Time == nil || k.Time.MeanMS <= 0 || k.RelL2 == nil || !(float64(*k.RelL2) <= gen.TuneMaxRelL2) {
					continue
				}
				t := timed{k.Time.MeanMS, run.Date}
				if k.Tile == chosen(name, k.Target) {
					if o, ok := own[at]; !ok || t.date >= o.date {
						own[at] = t
					}
				} else {
					rivals[at]++
				}
				if b, ok := best[at]; !ok || t.ms < b.ms {
					best[at], bestName[at] = t, k.Spec
				}
			}
		}
		slices.Sort(dates)
		byTarget := map[string]*ZooRivals{}
		for _, t := range plan.Targets {
			byTarget[t.Name] = &ZooRivals{Target: t.Name, Run: g + ", " + strings.Join(dates, " and ")}
		}
		keys := slices.Collect(maps.Keys(seen))
		slices.SortFunc(keys, func(a, b key) int { return strings.Compare(a.spec+" "+a.target, b.spec+" "+b.target) })
		worst := map[string]float64{}
		for _, at := range keys {
			z := byTarget[at.target]
			if z == nil {
				continue
			}
			o, ok := own[at]
			switch {
			case !ok:
				z.Untimed = append(z.Untimed, at.spec)
				continue
			case rivals[at] == 0:
				continue // timed alone: nothing to compare with
			}
			z.Shapes++
			ratio := o.ms / best[at].ms
			if ratio <= RivalBound {
				z.Within++
			}
			if ratio > worst[at.target] {
				worst[at.target] = ratio
				z.Worst = fmt.Sprintf("%s %.2fx (%s)", at.spec, ratio, bestName[at])
			}
		}
		for _, t := range plan.Targets {
			if z := byTarget[t.Name]; z.Shapes > 0 || len(z.Untimed) > 0 {
				out = append(out, *z)
			}
		}
	}
	return out
}

// defaultRate is the TF32 rate cuDNN's default reached on row's shape, in
// FLOP/s (0 without its time).
func defaultRate(row Row) float64 {
	if row.RefDefaultMS == nil || row.RefDefaultMS.Mean <= 0 {
		return 0
	}
	return row.GFLOPs * 1e9 / (row.RefDefaultMS.Mean * 1e-3)
}

// zooSection builds the zoo's section from its run's results (zoo.json,
// then e2e.json's for the files zoo.json lacks).
func zooSection(root string, specs []gen.Loaded, byName map[string]gen.Loaded, runs ...*HarnessRun) Zoo {
	var z Zoo
	measured := map[string]bool{}
	for _, run := range runs {
		if run == nil {
			continue
		}
		for _, h := range run.Results {
			l, ok := byName[h.Spec]
			if !ok || !isZoo(l) {
				continue
			}
			h.Target = targetOf(h.Target)
			p := planFor(l, h.Target)
			key := h.Spec + "/" + h.Backend + "/" + h.Target
			if p == nil || measured[key] {
				continue
			}
			if z.Date == "" {
				z.GPU, z.Date = run.GPU, run.Date
				if run.Driver != nil {
					z.Driver = *run.Driver
				}
			}
			measured[key] = true
			z.Rows = append(z.Rows, rowOf(root, h, p, run.GPU))
		}
	}
	best := fastest(z.Rows)
	for _, l := range specs {
		if !isZoo(l) {
			continue
		}
		s := l.Spec()
		for _, t := range l.Plans {
			if b, ok := best[s.Name+"/"+t.Target.Name]; ok {
				z.Best = append(z.Best, b)
			} else {
				z.Missing = append(z.Missing, s.Name+" "+t.Target.Name)
			}
			for _, backend := range s.Kernel.Backends {
				if !measured[s.Name+"/"+backend+"/"+t.Target.Name] {
					z.Rows = append(z.Rows, rowOf(root, HarnessResult{Spec: s.Name, Backend: backend, Target: t.Target.Name, Disposition: NotMeasured}, t, z.GPU))
				}
			}
		}
	}
	sortRows(z.Rows, false)
	slices.SortStableFunc(z.Best, func(a, b Row) int {
		if c := strings.Compare(a.Target, b.Target); c != 0 {
			return c
		}
		return strings.Compare(a.Spec, b.Spec)
	})
	z.Summary = zooSummary(specs, z.Best)
	return z
}

func zooSummary(specs []gen.Loaded, best []Row) []ZooSummary {
	var out []ZooSummary
	for _, l := range specs {
		if !isZoo(l) {
			continue
		}
		for _, p := range l.Plans {
			i := slices.IndexFunc(out, func(s ZooSummary) bool { return s.Target == p.Target.Name })
			if i < 0 {
				// The target's fastest exact path: 3xTF32 in its CUDA file
				// (by mma.sync where it has no wgmma).
				peak := p.Target.Ceilings(geom.H200, "cuda").TF32x3
				out = append(out, ZooSummary{Target: p.Target.Name, Backends: map[string]int{}, ExactPeak: peak})
				i = len(out) - 1
			}
			out[i].Shapes++
		}
	}
	logSum := map[string]float64{}
	for _, row := range best {
		i := slices.IndexFunc(out, func(s ZooSummary) bool { return s.Target == row.Target })
		s := &out[i]
		s.Measured++
		s.Backends[row.Backend]++
		logSum[row.Target] += math.Log(row.SpeedupTF32)
		if row.SpeedupStrict >= 1 {
			s.BeatStrict++
		}
		if defaultRate(row) < TF32Rate/3 {
			s.SlowDefault++
			if row.SpeedupTF32 >= 1 {
				s.BeatDefault++
			} else if defaultRate(row) > s.ExactPeak {
				s.BeyondPeak = append(s.BeyondPeak, row.Spec)
			}
		}
	}
	for i := range out {
		if s := &out[i]; s.Measured > 0 {
			s.GeoMean = math.Exp(logSum[s.Target] / float64(s.Measured))
		}
	}
	slices.SortFunc(out, func(a, b ZooSummary) int { return strings.Compare(a.Target, b.Target) })
	return out
}

// zooRun reads zoo.json in dir (nil when there is none).
func zooRun(dir string) (*HarnessRun, error) { return readRun(filepath.Join(dir, "zoo.json")) }

// ZooPlotFile is the zoo's plot beside REPORT.md.
const ZooPlotFile = "zoo.svg"

func zooMarkdown(b *strings.Builder, r *Report) {
	z := r.Zoo
	if len(z.Best) == 0 && len(z.Missing) == 0 {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(b, format, a...) }
	p("\n## The zoo: realistic shapes with the plan's own choices\n\n")
	if z.Date != "" {
		p("Measured on **%s** (driver %s) on %s (`zoo.json`, from `verify/gpu-check.sh zoo`, run in slices),\n", z.GPU, z.Driver, z.Date)
		p("the evaluator's method as above, cuDNN timed in the same run. %s.\n", strings.ReplaceAll(sm80PTX, "\n", " "))
	}
	p("Every spec under `%s` leaves its kernel to the chooser; a row is the faster of its two files (CUDA and\n", ZooFolder)
	p("Triton) per target. \"cuDNN rate\" is the default (TF32) convolution's FLOP rate and its share of the %g TFLOP/s\n", TF32Rate/1e12)
	p("dense TF32 rate: below a third of it, the gate asks for at least the default's speed; above, an exact kernel\n")
	p("(three products to its one) is asked to beat strict fp32 only.\n\n")
	p("![speedup over cuDNN's default against problem size](%s)\n\n", ZooPlotFile)
	for _, rv := range z.Rivals {
		p("- %s CUDA choices against the candidates timed beside them (kernel-only, %s; `make tune UNDER=%s TOP=n`): within %gx of the fastest on **%d of %d** shapes; furthest: %s",
			rv.Target, rv.Run, ZooFolder, RivalBound, rv.Within, rv.Shapes, cmp.Or(rv.Worst, "none"))
		if len(rv.Untimed) > 0 {
			p("; today's choice never timed: %s", strings.Join(rv.Untimed, ", "))
		}
		p(".\n")
	}
	for _, s := range z.Summary {
		p("- %s: %d of %d shapes measured; at least strict fp32's speed on **%d of %d**; where cuDNN's default runs under a third of the TF32 rate (%d shapes) at least its speed on **%d**; geometric mean over the default **%.2fx**; faster backend: %s.\n",
			s.Target, s.Measured, s.Shapes, s.BeatStrict, s.Measured, s.SlowDefault, s.BeatDefault, s.GeoMean, backendCounts(s.Backends))
		if n := len(s.BeyondPeak); n > 0 {
			p("  Of the %d shapes slower than that default, %d ask for more than 3xTF32's peak in this target's CUDA file (%.1f TFLOP/s), which no exact kernel there reaches: %s.\n",
				s.SlowDefault-s.BeatDefault, n, s.ExactPeak/1e12, strings.Join(s.BeyondPeak, ", "))
		}
	}
	p("\n| shape | target | GFLOP | backend | ms mean | CUDA ms | Triton ms | default ms | strict ms | cuDNN rate | vs default | vs strict |\n")
	p("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	timeOf := func(spec, backend, target string) string {
		i := slices.IndexFunc(z.Rows, func(row Row) bool {
			return row.Spec == spec && row.Backend == backend && row.Target == target
		})
		if i < 0 || z.Rows[i].TimeMS == nil || z.Rows[i].Disposition != "passed" {
			return "–"
		}
		if z.Rows[i].OlderFile {
			return fmt.Sprintf("%.3f (older file)", z.Rows[i].TimeMS.Mean)
		}
		return fmt.Sprintf("%.3f", z.Rows[i].TimeMS.Mean)
	}
	if slices.ContainsFunc(z.Rows, func(row Row) bool { return row.OlderFile }) {
		p("\nA time marked (older file) was measured on code that has changed since (the chooser or the generator changed).\n")
	}
	for _, row := range z.Best {
		rate := defaultRate(row)
		p("| %s | %s | %.3g | %s | %.3f | %s | %s | %.3f | %.3f | %.1f TFLOP/s (%.0f%%) | %s | %s |\n",
			row.Spec, row.Target, row.GFLOPs, row.Backend, row.TimeMS.Mean, timeOf(row.Spec, "cuda", row.Target), timeOf(row.Spec, "triton", row.Target),
			row.RefDefaultMS.Mean, row.RefStrictMS.Mean, rate/1e12, 100*rate/TF32Rate, ratio(row.SpeedupTF32), ratio(row.SpeedupStrict))
	}
	if len(z.Missing) > 0 {
		p("\nNot yet measured: %s.\n", strings.Join(z.Missing, ", "))
	}
	notPassed(b, z.Rows)
}

func backendCounts(m map[string]int) string {
	var parts []string
	for _, k := range sortedCounts(m) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// ZooPlot draws each zoo shape's speedup over cuDNN's default (the faster
// backend) against its GFLOP, both on log scales, a colour per target.
func ZooPlot(r *Report) string {
	const w, h, left, right, top, bottom = 820, 480, 70, 20, 40, 50
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="10" y="20" font-size="14">Zoo: speedup over cuDNN's default (faster backend) against problem size; line at 1x</text>`+"\n")
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, row := range r.Zoo.Best {
		lo, hi = math.Min(lo, math.Log10(row.GFLOPs)), math.Max(hi, math.Log10(row.GFLOPs))
	}
	if len(r.Zoo.Best) == 0 {
		lo, hi = -3, 3
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi == lo {
		hi = lo + 1
	}
	const sLo, sHi = -3.0, 5.0 // log2 of the speedup: 1/8x to 32x
	x := func(gflop float64) float64 {
		return left + (math.Log10(gflop)-lo)/(hi-lo)*(w-left-right)
	}
	y := func(speedup float64) float64 {
		s := math.Max(sLo, math.Min(sHi, math.Log2(speedup)))
		return top + (sHi-s)/(sHi-sLo)*(h-top-bottom)
	}
	for e := lo; e <= hi; e++ {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%d" x2="%.0f" y2="%d" stroke="#ddd"/>`+"\n", x(math.Pow(10, e)), top, x(math.Pow(10, e)), h-bottom)
		fmt.Fprintf(&b, `<text x="%.0f" y="%d" text-anchor="middle">1e%+.0f</text>`+"\n", x(math.Pow(10, e)), h-bottom+16, e)
	}
	for s := sLo; s <= sHi; s++ {
		stroke := "#ddd"
		if s == 0 {
			stroke = "black"
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="%.0f" x2="%d" y2="%.0f" stroke="%s"/>`+"\n", left, y(math.Exp2(s)), w-right, y(math.Exp2(s)), stroke)
		fmt.Fprintf(&b, `<text x="%d" y="%.0f" text-anchor="end">%gx</text>`+"\n", left-6, y(math.Exp2(s))+4, math.Exp2(s))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">GFLOP of the convolution</text>`+"\n", (w+left)/2, h-12)
	colors := map[string]string{"sm80": "#e76f51", "sm90": "#2a9d8f"}
	for i, t := range []string{"sm80", "sm90"} {
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="5" fill="%s"/><text x="%d" y="%d">%s file</text>`+"\n", left+20+i*110, top+12, colors[t], left+30+i*110, top+16, t)
	}
	for _, row := range r.Zoo.Best {
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s" fill-opacity="0.8"><title>%s %s %s: %.2fx</title></circle>`+"\n",
			x(row.GFLOPs), y(row.SpeedupTF32), colors[row.Target], row.Spec, row.Target, row.Backend, row.SpeedupTF32)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
