// Package report turns the GPU host's JSON results into out/REPORT.md,
// out/report.json and a plot: per problem, backend and target the
// disposition, error against float64, times, speedups over PyTorch and the
// fraction of the problem's floor reached.
package report

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/verify/gpu"
)

// Times is a mean and median in milliseconds.
type Times struct {
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
}

// HarnessResult is one (spec, backend, target) of the evaluator harness.
type HarnessResult struct {
	Spec            string   `json:"spec"`
	Backend         string   `json:"backend"`
	Target          string   `json:"target"`        // "" in runs before the per-target files: read as LegacyTarget
	Ran             string   `json:"ran,omitempty"` // how the file ran where that is not its target's own code
	Disposition     string   `json:"disposition"`
	Reason          string   `json:"reason"`
	MaxRelL2        *float64 `json:"max_rel_l2"`
	RefDefaultRelL2 *float64 `json:"ref_default_rel_l2"`
	Allclose1e2     *bool    `json:"allclose_1e2"`
	Allclose1e4     *bool    `json:"allclose_1e4"`
	NaNOutputs      *int     `json:"nan_outputs"`
	Trials          int      `json:"trials"`
	TimeMS          *Times   `json:"time_ms"`
	RefDefaultMS    *Times   `json:"ref_default_ms"`
	RefStrictMS     *Times   `json:"ref_strict_ms"`
	RefCompileMS    *Times   `json:"ref_compile_ms"`   // torch.compile of the reference (level2.json)
	SHA256          string   `json:"sha256,omitempty"` // of the code measured (codeSHA256)
}

// HarnessRun is one harness JSON document.
type HarnessRun struct {
	GPU     string          `json:"gpu"`
	Torch   string          `json:"torch"`
	CUDA    string          `json:"cuda"`
	CuDNN   string          `json:"cudnn"`
	Driver  *string         `json:"driver"`
	Date    string          `json:"date"`
	Results []HarnessResult `json:"results"`
}

// LegacyTarget is the target of results that name none: they come from
// runs before every spec had a file per target, on the H200, whose CUDA
// files ran their sm_90a code, the sm90 files' now.
const LegacyTarget = "sm90"

// NotMeasured is the disposition of a row with no result yet.
const NotMeasured = "not yet measured"

func targetOf(t string) string {
	if t == "" {
		return LegacyTarget
	}
	return t
}

// Row is one (problem, backend, target) line of the report.
type Row struct {
	HarnessResult
	Precision     string  `json:"precision"`
	FloorMS       float64 `json:"floor_ms"`
	FloorFraction float64 `json:"floor_fraction,omitempty"` // floor / time: 1 is the floor
	SpeedupTF32   float64 `json:"speedup_vs_default,omitempty"`
	SpeedupStrict float64 `json:"speedup_vs_strict,omitempty"`
	// SpeedupCompile is over torch.compile of the reference (level-2
	// rows of a run that timed it).
	SpeedupCompile float64 `json:"speedup_vs_compile,omitempty"`
	GFLOPs         float64 `json:"gflop"`
	MinBytes       float64 `json:"min_bytes"` // what the floor's memory bound counts (plan.Plan.MinBytes)
	// From the kernel verifier (CUDA rows): registers and spill bytes per
	// architecture compiled, and the kernel-only mean time.
	Arch     map[string]gpu.ArchInfo `json:"arch,omitempty"`
	KernelMS float64                 `json:"kernel_ms,omitempty"`
	// OlderFile: the code measured is not the one in out/ now (the spec
	// was edited or retuned since), so the precision shown may not be
	// the one measured.
	OlderFile bool `json:"older_file,omitempty"`
	// Regression: a spec of RegressionFolder, listed but not counted in
	// the geometric means.
	Regression bool `json:"regression,omitempty"`
	// Untargeted: the result names no target (a run from before the
	// per-target files), shown as LegacyTarget's.
	Untargeted bool `json:"untargeted,omitempty"`
	// FromE2E: a level-2 row that level2.json lacks, taken from the main
	// run (e2e.json), which timed no torch.compile.
	FromE2E bool `json:"from_e2e,omitempty"`
	// CompileFrom: the date of the earlier level-2 run (level2-compile.json)
	// its torch.compile time comes from, where its own run timed none.
	CompileFrom string `json:"compile_from,omitempty"`
}

// Sweep summarises a random-configuration run per backend.
type Sweep struct {
	Backend  string   `json:"backend"`
	Configs  int      `json:"configs"`
	Passed   int      `json:"passed"`
	MaxRelL2 float64  `json:"max_rel_l2"`
	Failures []string `json:"failures,omitempty"`
}

// Report is everything REPORT.md shows, also written as report.json.
type Report struct {
	GPU         string             `json:"gpu"`
	Driver      string             `json:"driver"`
	Torch       string             `json:"torch"`
	CUDA        string             `json:"cuda"`
	CuDNN       string             `json:"cudnn"`
	Date        string             `json:"date"`
	Commit      string             `json:"commit"`
	Rows        []Row              `json:"rows"`
	GeoMean     map[string]float64 `json:"geomean_speedup_vs_default"`      // per "<backend> <target>"
	Best        []Row              `json:"best"`                            // fastest passed backend per problem and target
	BestGeoMean map[string]float64 `json:"best_geomean_speedup_vs_default"` // per target
	Sweeps      []Sweep            `json:"random_sweep"`
	Tuning      []gpu.Result       `json:"tuning,omitempty"`
	TuningRuns  []string           `json:"tuning_runs,omitempty"` // date and commit of each run the candidates come from
	SweepRuns   []string           `json:"sweep_runs,omitempty"`  // seed, size, date (and commit) of each random sweep
	Mutation    *Mutation          `json:"mutation_check,omitempty"`
	Big         *BigRun            `json:"big,omitempty"`
	Level2      Level2             `json:"level2"`
	Zoo         Zoo                `json:"zoo"`
}

// Level2 is the section of the specs with ops around the convolution
// (KernelBench level 2): every file's row, from level2.json (gpu-check's
// level2 stage, where the reference is timed eager, strict fp32 and under
// torch.compile in the same run) or, for a file it lacks, e2e.json; and a
// summary per backend and target. The run named is level2.json's.
type Level2 struct {
	GPU     string          `json:"gpu,omitempty"`
	Driver  string          `json:"driver,omitempty"`
	Torch   string          `json:"torch,omitempty"`
	CUDA    string          `json:"cuda,omitempty"`
	CuDNN   string          `json:"cudnn,omitempty"`
	Date    string          `json:"date,omitempty"`
	Rows    []Row           `json:"rows"`
	Summary []Level2Summary `json:"summary"`
	// NoTriton lists the problems the Triton backend cannot express yet
	// (their specs leave the backends open), with the plan's reason.
	NoTriton []NoTriton `json:"no_triton,omitempty"`
	// Best is, per target, each problem's faster passed backend against
	// eager and torch.compile: the level-2 gates.
	Best map[string]Level2Best `json:"best,omitempty"`
}

// Level2Best is one target's faster backend per problem: how many
// problems, the geometric-mean speedup over eager, how many are faster
// than eager, and of those with a torch.compile time how many are faster
// than it.
type Level2Best struct {
	Problems    int     `json:"problems"`
	GeoMean     float64 `json:"geomean_speedup_vs_default"`
	BeatEager   int     `json:"faster_than_default"`
	WithCompile int     `json:"timed_vs_compile"`
	BeatCompile int     `json:"faster_than_compile"`
}

// NoTriton is a level-2 problem without a Triton file, and why
// (plan.Plan.TritonLeftOut, per target where the targets differ).
type NoTriton struct {
	Spec string `json:"spec"`
	Why  string `json:"why"`
}

// Level2Summary tallies one backend and target's level-2 files: how many
// passed, and over the passed ones with the reference's time the
// geometric-mean speedup over eager PyTorch and over torch.compile and how
// many are faster than each.
type Level2Summary struct {
	Backend        string  `json:"backend"`
	Target         string  `json:"target"`
	Files          int     `json:"files"`
	NotMeasured    int     `json:"not_measured"`
	Passed         int     `json:"passed"`
	VsEager        int     `json:"timed_vs_default"` // passed rows with an eager time
	BeatEager      int     `json:"faster_than_default"`
	GeoMeanEager   float64 `json:"geomean_speedup_vs_default,omitempty"`
	VsCompile      int     `json:"timed_vs_compile"` // passed rows with a torch.compile time
	BeatCompile    int     `json:"faster_than_compile"`
	GeoMeanCompile float64 `json:"geomean_speedup_vs_compile,omitempty"`
}

// BigRun is verify/harness/bigcheck.py's run over configurations with
// tensors of 2^31 elements or more: sampled outputs against a float64
// direct sum, the output NaN-poisoned first.
type BigRun struct {
	GPU     string      `json:"gpu"`
	Torch   string      `json:"torch"`
	Date    string      `json:"date"`
	Commit  string      `json:"commit"`
	Results []BigResult `json:"results"`
}

// BigResult is one submission of a BigRun.
type BigResult struct {
	Spec           string  `json:"spec"`
	Backend        string  `json:"backend"`
	Target         string  `json:"target,omitempty"` // "" in runs before the per-target files
	OutputElements int64   `json:"output_elements"`
	Poisoned       bool    `json:"poisoned"` // the output took the NaN-filled block
	NaNFree        bool    `json:"nan_free"` // no output stayed NaN
	Samples        int     `json:"samples"`
	MaxErr         float64 `json:"max_err"`
	Bad            int     `json:"bad"` // samples off the float64 sum
	OK             bool    `json:"ok"`
	Error          string  `json:"error"`
}

// Mutation summarises the verifier's mutation check: kernels with planted
// bugs, each of which must come out incorrect.
type Mutation struct {
	Date, Commit string
	Planted      int            `json:"planted"`
	Caught       int            `json:"caught"`
	Missed       []gpu.Result   `json:"missed,omitempty"` // passed or failed instead of incorrect
	ByMutation   map[string]int `json:"caught_by_mutation"`
}

func mutationCheck(rep *gpu.Report) *Mutation {
	m := &Mutation{Date: rep.Date, Commit: rep.Commit, ByMutation: map[string]int{}}
	for _, k := range rep.Results {
		if k.Mutation == "" {
			continue
		}
		m.Planted++
		if k.Disposition == gpu.Incorrect {
			m.Caught++
			m.ByMutation[k.Mutation]++
		} else {
			m.Missed = append(m.Missed, k)
		}
	}
	if m.Planted == 0 {
		return nil
	}
	return m
}

func readRun(path string) (*HarnessRun, error) { return readJSON[HarnessRun](path) }

// readJSON decodes the JSON document at path, nil when there is none.
func readJSON[T any](path string) (*T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &v, nil
}

// Build reads the results in dir (e2e.json from the harness, kernels.json
// from the kernel verifier, commit) and the specs under root.
func Build(root, dir string) (*Report, error) {
	e2e, err := readRun(filepath.Join(dir, "e2e.json"))
	if err != nil {
		return nil, err
	}
	if e2e == nil {
		return nil, fmt.Errorf("%s: no e2e.json: run the GPU check first", dir)
	}
	specs, err := gen.LoadAll(root)
	if err != nil {
		return nil, err
	}
	byName := map[string]gen.Loaded{}
	for _, l := range specs {
		byName[l.Spec().Name] = l
	}
	commit, _ := os.ReadFile(filepath.Join(dir, "commit"))
	r := &Report{GPU: e2e.GPU, Torch: e2e.Torch, CUDA: e2e.CUDA, CuDNN: e2e.CuDNN, Date: e2e.Date,
		Commit: strings.TrimSpace(string(commit)), GeoMean: map[string]float64{}, BestGeoMean: map[string]float64{}}
	if e2e.Driver != nil {
		r.Driver = *e2e.Driver
	}
	kernels, err := readKernels(filepath.Join(dir, "kernels.json"))
	if err != nil {
		return nil, err
	}
	byKernel := map[string]gpu.Result{}
	tuningRun := func(rep *gpu.Report, rows []gpu.Result) {
		if len(rows) > 0 {
			r.TuningRuns = append(r.TuningRuns, fmt.Sprintf("%s at commit %s", rep.Date, rep.Commit))
			r.Tuning = append(r.Tuning, rows...)
		}
	}
	var tuned []gpu.Result
	for _, k := range kernels.Results {
		switch {
		case strings.HasPrefix(k.SpecPath, "random/"):
		case isCandidatePath(k.SpecPath):
			tuned = append(tuned, k)
		default:
			byKernel[k.Spec+"/"+targetOf(k.Target)] = k
		}
	}
	tuningRun(kernels, tuned)
	// Further random-configuration runs of the kernel verifier (other
	// seeds: -merge joins only runs of one seed) count in the same tally.
	randomItems := slices.Clone(kernels.Results)
	r.SweepRuns = append(r.SweepRuns, kernelSweepRun(kernels)...)
	more, _ := filepath.Glob(filepath.Join(dir, "random-kernels*.json"))
	for _, path := range more {
		extra, err := readKernels(path)
		if err != nil {
			return nil, err
		}
		randomItems = append(randomItems, extra.Results...)
		r.SweepRuns = append(r.SweepRuns, kernelSweepRun(extra)...)
	}
	r.Sweeps = kernelSweeps(randomItems)
	// Separate tuning runs (gpu-check's tune-kernels.json, and earlier or
	// later ones of other candidates beside it) add candidates.
	tunes, _ := filepath.Glob(filepath.Join(dir, "tune-kernels*.json"))
	var tuneRuns []*gpu.Report
	for _, path := range tunes {
		tune, err := readKernels(path)
		if err != nil {
			return nil, err
		}
		tuneRuns = append(tuneRuns, tune)
		tuned = nil
		for _, k := range tune.Results {
			// The zoo's candidates are summarised against its choices
			// (zooRivals), not listed.
			if name, current := candidateOf(k); !current && !isZoo(byName[name]) {
				tuned = append(tuned, k)
			}
		}
		tuningRun(tune, tuned)
	}
	mutate, err := readKernels(filepath.Join(dir, "mutate.json"))
	if err != nil {
		return nil, err
	}
	r.Mutation = mutationCheck(mutate)
	if r.Big, err = readJSON[BigRun](filepath.Join(dir, "big.json")); err != nil {
		return nil, err
	}
	// The harness's sweep (gpu-check's random.json) and sweeps of other
	// seeds beside it count in one tally.
	sweeps, _ := filepath.Glob(filepath.Join(dir, "random-sweep*.json"))
	var swept []HarnessResult
	for _, path := range append([]string{filepath.Join(dir, "random.json")}, sweeps...) {
		rnd, err := readRun(path)
		if err != nil {
			return nil, err
		}
		if rnd != nil {
			swept = append(swept, rnd.Results...)
			r.SweepRuns = append(r.SweepRuns, harnessSweepRun(rnd)...)
		}
	}
	r.Sweeps = append(r.Sweeps, harnessSweeps(swept)...)
	level2, err := readRun(filepath.Join(dir, "level2.json"))
	if err != nil {
		return nil, err
	}
	// torch.compile of a reference, timed in an earlier level-2 run, for
	// the rows whose run timed none (it costs about 20 s a problem).
	compiled, err := readRun(filepath.Join(dir, "level2-compile.json"))
	if err != nil {
		return nil, err
	}
	if compiled != nil && level2 != nil && compiled.GPU != level2.GPU {
		return nil, fmt.Errorf("%s: torch.compile times from %s beside a level-2 run on %s: one GPU model a table",
			filepath.Join(dir, "level2-compile.json"), compiled.GPU, level2.GPU)
	}
	compileOf := map[string]*Times{}
	if compiled != nil {
		for _, h := range compiled.Results {
			if h.RefCompileMS != nil {
				compileOf[h.Spec] = h.RefCompileMS
			}
		}
	}
	logSum, count := map[string]float64{}, map[string]int{}
	measured := map[string]bool{}
	// Level-2 rows: level2.json's, then e2e.json's for the files it lacks.
	var level2Results []HarnessResult
	if level2 != nil {
		r.Level2.GPU, r.Level2.Torch, r.Level2.CUDA, r.Level2.CuDNN, r.Level2.Date = level2.GPU, level2.Torch, level2.CUDA, level2.CuDNN, level2.Date
		if level2.Driver != nil {
			r.Level2.Driver = *level2.Driver
		}
		level2Results = level2.Results
	}
	for i, h := range append(slices.Clone(level2Results), e2e.Results...) {
		fromE2E := i >= len(level2Results)
		l, ok := byName[h.Spec]
		if !ok {
			continue // a spec removed since the run
		}
		untargeted := h.Target == ""
		h.Target = targetOf(h.Target)
		p := planFor(l, h.Target)
		key := h.Spec + "/" + h.Backend + "/" + h.Target
		switch {
		case p == nil: // a target no longer generated
			continue
		case isZoo(l): // the zoo's section
			continue
		case !fromE2E && !isLevel2(l): // level 1's rows are the e2e run's alone
			continue
		case measured[key]: // a level-2 file level2.json has
			continue
		}
		measured[key] = true
		carried := ""
		if t, ok := compileOf[h.Spec]; ok && h.RefCompileMS == nil && isLevel2(l) {
			h.RefCompileMS, carried = t, compiled.Date
		}
		gpu := e2e.GPU
		if isLevel2(l) && !fromE2E {
			gpu = level2.GPU
		}
		row := rowOf(root, h, p, gpu)
		row.Regression = isRegression(l)
		row.Untargeted = untargeted
		row.CompileFrom = carried
		if k, ok := byKernel[h.Spec+"/"+h.Target]; ok && h.Backend == "cuda" {
			row.Arch = k.Arch
			if k.Time != nil {
				row.KernelMS = k.Time.MeanMS
			}
		}
		if isLevel2(l) {
			row.FromE2E = fromE2E
			r.Level2.Rows = append(r.Level2.Rows, row)
			continue
		}
		r.Rows = append(r.Rows, row)
		if h.Disposition == "passed" && row.SpeedupTF32 > 0 && !row.Regression {
			key := h.Backend + " " + h.Target
			logSum[key] += math.Log(row.SpeedupTF32)
			count[key]++
		}
	}
	// Every file of every spec has a row: one the results lack is marked
	// as not yet measured.
	for _, l := range specs {
		s := l.Spec()
		if isZoo(l) {
			continue
		}
		for _, backend := range s.Kernel.Backends {
			for i, t := range plan.Targets {
				if measured[s.Name+"/"+backend+"/"+t.Name] {
					continue
				}
				gpu := e2e.GPU
				if isLevel2(l) {
					gpu = r.Level2.GPU
				}
				row := rowOf(root, HarnessResult{Spec: s.Name, Backend: backend, Target: t.Name, Disposition: NotMeasured}, l.Plans[i], gpu)
				row.Regression = isRegression(l)
				if isLevel2(l) {
					r.Level2.Rows = append(r.Level2.Rows, row)
				} else {
					r.Rows = append(r.Rows, row)
				}
			}
		}
	}
	zoo, err := zooRun(dir)
	if err != nil {
		return nil, err
	}
	r.Zoo = zooSection(root, specs, byName, zoo, e2e)
	r.Zoo.Rivals = zooRivals(byName, tuneRuns)
	sortRows(r.Level2.Rows, true)
	r.Level2.Summary = level2Summary(r.Level2.Rows)
	r.Level2.Best = level2Best(r.Level2.Rows)
	r.Level2.NoTriton = noTriton(specs)
	sortRows(r.Rows, false)
	for b, s := range logSum {
		r.GeoMean[b] = math.Exp(s / float64(count[b]))
	}
	for _, row := range fastest(r.Rows) {
		if !row.Regression {
			r.Best = append(r.Best, row)
		}
	}
	// Summed in spec order: a map's order would change the last digits
	// from one rendering to the next.
	sort.Slice(r.Best, func(i, j int) bool {
		if r.Best[i].Target != r.Best[j].Target {
			return r.Best[i].Target < r.Best[j].Target
		}
		return r.Best[i].Spec < r.Best[j].Spec
	})
	bestLog, bestN := map[string]float64{}, map[string]int{}
	for _, row := range r.Best {
		bestLog[row.Target] += math.Log(row.SpeedupTF32)
		bestN[row.Target]++
	}
	for t, s := range bestLog {
		r.BestGeoMean[t] = math.Exp(s / float64(bestN[t]))
	}
	return r, nil
}

// isLevel2 tells whether a spec runs ops around its convolution: its rows
// are the level-2 section's.
func isLevel2(l gen.Loaded) bool { return l.Plans[0].Epilogue.Chain.Any() }

// RegressionFolder holds specs that keep a fixed bug fixed (shapes of a
// few microseconds): their rows are listed, not counted in the geometric
// means of the problems.
const RegressionFolder = "specs/regress/"

func isRegression(l gen.Loaded) bool { return strings.HasPrefix(l.Path, RegressionFolder) }

// planFor is a spec's plan for a target (nil for a target it has none of).
func planFor(l gen.Loaded, target string) *plan.Plan {
	for i, t := range plan.Targets {
		if t.Name == target && i < len(l.Plans) {
			return l.Plans[i]
		}
	}
	return nil
}

// rowOf is a result's row: the file's precision and floor from its plan,
// the speedups from its times.
func rowOf(root string, h HarnessResult, p *plan.Plan, gpu string) Row {
	precision := p.Spec.Kernel.PrecisionFor(h.Backend)
	row := Row{HarnessResult: h, Precision: precision, FloorMS: p.FloorMSOn(geom.CeilingsOf(gpu), h.Backend, precision), GFLOPs: p.Conv.FLOPs() / 1e9, MinBytes: p.MinBytes()}
	row.OlderFile = h.SHA256 != "" && h.SHA256 != codeSHA256(filepath.Join(root, "out", h.Spec, h.Backend+"."+h.Target+".py"))
	if t := h.TimeMS; t != nil && t.Mean > 0 {
		row.FloorFraction = row.FloorMS / t.Mean
		speedup := func(ref *Times) float64 {
			if ref == nil {
				return 0
			}
			return ref.Mean / t.Mean
		}
		row.SpeedupTF32, row.SpeedupStrict, row.SpeedupCompile = speedup(h.RefDefaultMS), speedup(h.RefStrictMS), speedup(h.RefCompileMS)
	}
	return row
}

// sortRows orders rows by spec, backend and target; specs by name, or
// with numbers, by the numbers' values (the level-2 problems: l2_3 before
// l2_13).
func sortRows(rows []Row, numeric bool) {
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Spec != b.Spec {
			if numeric {
				return numericLess(a.Spec, b.Spec)
			}
			return a.Spec < b.Spec
		}
		if a.Backend != b.Backend {
			return a.Backend < b.Backend
		}
		return a.Target < b.Target
	})
}

// numericLess orders names the way a reader counts: runs of digits by
// their value, the rest by bytes.
func numericLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			x, y := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if len(x) != len(y) {
				return len(x) < len(y)
			}
			if x != y {
				return x < y
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

// digitRun is the length of s's leading run of ASCII digits.
func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// level2Summary tallies the level-2 rows per backend and target, in
// that order (the rows' sums in row order: the last digits stay put).
// fastest is the fastest passed row with the reference's time per spec
// and target (keyed "spec/target").
func fastest(rows []Row) map[string]Row {
	best := map[string]Row{}
	for _, row := range rows {
		if row.Disposition != "passed" || row.SpeedupTF32 == 0 {
			continue
		}
		key := row.Spec + "/" + row.Target
		if b, ok := best[key]; !ok || row.TimeMS.Mean < b.TimeMS.Mean {
			best[key] = row
		}
	}
	return best
}

// level2Best is, per target, each problem's faster passed backend against
// eager and torch.compile.
func level2Best(rows []Row) map[string]Level2Best {
	best := fastest(rows)
	out, logSum := map[string]Level2Best{}, map[string]float64{}
	for _, row := range rows { // in row order: the sum's last digits stay put
		if b, ok := best[row.Spec+"/"+row.Target]; !ok || b.Backend != row.Backend {
			continue
		}
		s := out[row.Target]
		s.Problems++
		logSum[row.Target] += math.Log(row.SpeedupTF32)
		if row.SpeedupTF32 > 1 {
			s.BeatEager++
		}
		if row.SpeedupCompile > 0 {
			s.WithCompile++
			if row.SpeedupCompile > 1 {
				s.BeatCompile++
			}
		}
		out[row.Target] = s
	}
	for t, s := range out {
		s.GeoMean = math.Exp(logSum[t] / float64(s.Problems))
		out[t] = s
	}
	return out
}

func level2Summary(rows []Row) []Level2Summary {
	var out []Level2Summary
	logEager, logCompile := map[int]float64{}, map[int]float64{}
	for _, row := range rows {
		i := slices.IndexFunc(out, func(s Level2Summary) bool { return s.Backend == row.Backend && s.Target == row.Target })
		if i < 0 {
			out = append(out, Level2Summary{Backend: row.Backend, Target: row.Target})
			i = len(out) - 1
		}
		s := &out[i]
		s.Files++
		switch row.Disposition {
		case NotMeasured:
			s.NotMeasured++
			continue
		case "passed":
			s.Passed++
		default:
			continue
		}
		if row.SpeedupTF32 > 0 {
			s.VsEager++
			logEager[i] += math.Log(row.SpeedupTF32)
			if row.SpeedupTF32 > 1 {
				s.BeatEager++
			}
		}
		if row.SpeedupCompile > 0 {
			s.VsCompile++
			logCompile[i] += math.Log(row.SpeedupCompile)
			if row.SpeedupCompile > 1 {
				s.BeatCompile++
			}
		}
	}
	for i := range out {
		if s := &out[i]; s.VsEager > 0 {
			s.GeoMeanEager = math.Exp(logEager[i] / float64(s.VsEager))
		}
		if s := &out[i]; s.VsCompile > 0 {
			s.GeoMeanCompile = math.Exp(logCompile[i] / float64(s.VsCompile))
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Backend != out[j].Backend {
			return out[i].Backend < out[j].Backend
		}
		return out[i].Target < out[j].Target
	})
	return out
}

// sweepTally counts a random sweep's outcomes per key (backend and
// precision, or backend end to end), in key order.
type sweepTally map[string]*Sweep

// add records one configuration; err is its error when finite, or nil
// (failures are listed, not folded into the maximum).
func (t sweepTally) add(key, spec string, passed bool, disposition, reason string, err *float64) {
	s := t[key]
	if s == nil {
		s = &Sweep{Backend: key}
		t[key] = s
	}
	s.Configs++
	if passed {
		s.Passed++
	} else {
		s.Failures = append(s.Failures, fmt.Sprintf("%s: %s %s", spec, disposition, firstLine(reason)))
	}
	if err != nil && !math.IsNaN(*err) && !math.IsInf(*err, 0) {
		s.MaxRelL2 = math.Max(s.MaxRelL2, *err)
	}
}

func (t sweepTally) sweeps() []Sweep {
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]Sweep, len(keys))
	for i, k := range keys {
		out[i] = *t[k]
	}
	return out
}

// harnessSweeps summarises the harness's random-configuration sweep per
// backend.
func harnessSweeps(results []HarnessResult) []Sweep {
	t := sweepTally{}
	for _, h := range results {
		t.add(h.Backend+" end to end", h.Spec, h.Disposition == "passed", h.Disposition, h.Reason, h.MaxRelL2)
	}
	return t.sweeps()
}

// kernelSweepRun describes a kernel verifier run's random configurations
// (none if it had none).
func kernelSweepRun(rep *gpu.Report) []string {
	var names []string
	passed, worst := 0, 0.0
	for _, k := range rep.Results {
		if strings.HasPrefix(k.SpecPath, "random/") {
			names = append(names, k.Spec)
			if k.Disposition == gpu.Passed {
				passed++
			}
			if k.RelL2 != nil {
				worst = math.Max(worst, float64(*k.RelL2))
			}
		}
	}
	if len(names) == 0 {
		return nil
	}
	return []string{fmt.Sprintf("kernel verifier, %s: %d configurations on %s at commit %.7s: %d passed, worst rel L2 %.1e",
		seedsOf(names), len(names), rep.Date, rep.Commit, passed, worst)}
}

// harnessSweepRun describes a harness sweep (none if it ran nothing).
func harnessSweepRun(run *HarnessRun) []string {
	if len(run.Results) == 0 {
		return nil
	}
	names := make([]string, len(run.Results))
	for i, h := range run.Results {
		names[i] = h.Spec
	}
	return []string{fmt.Sprintf("harness, %s: %d configurations on %s", seedsOf(names), len(names), run.Date)}
}

// seedsOf names the seeds of random configurations (rand_<seed>_<n>).
func seedsOf(names []string) string {
	var seeds []string
	for _, n := range names {
		parts := strings.Split(n, "_")
		if len(parts) == 3 && parts[0] == "rand" && !slices.Contains(seeds, parts[1]) {
			seeds = append(seeds, parts[1])
		}
	}
	if len(seeds) == 1 {
		return "seed " + seeds[0]
	}
	return "seeds " + strings.Join(seeds, ", ")
}

// readKernels reads the kernel verifier's report; a missing file is an
// empty report (the verifier was not carried to the GPU host).
func readKernels(path string) (*gpu.Report, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return &gpu.Report{}, nil
	}
	return gpu.ReadReport(path)
}

// kernelSweeps summarises the verifier's random configurations per
// backend and precision.
func kernelSweeps(items []gpu.Result) []Sweep {
	t := sweepTally{}
	for _, k := range items {
		if !strings.HasPrefix(k.SpecPath, "random/") {
			continue
		}
		var err *float64
		if k.RelL2 != nil {
			e := float64(*k.RelL2)
			err = &e
		}
		key := k.Backend + " " + k.Precision
		if k.Target != "" {
			key = k.Backend + " " + k.Target + " " + k.Precision
		}
		t.add(key, k.Spec, k.Disposition == gpu.Passed, string(k.Disposition), k.Reason, err)
	}
	return t.sweeps()
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	return s
}

// codeSHA256 is the harness's digest of a submission (code_sha256 in
// evaluate.py): the hex SHA-256 of the file after its module docstring, ""
// when it cannot be read.
func codeSHA256(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	const quotes = `"""`
	if start := bytes.Index(data, []byte(quotes)); start >= 0 {
		if end := bytes.Index(data[start+3:], []byte(quotes)); end >= 0 {
			data = data[start+3+end+3:]
		}
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// noTriton lists the level-2 specs whose plans left Triton out, in spec
// order, with the reason (each target's where they differ).
func noTriton(specs []gen.Loaded) []NoTriton {
	var out []NoTriton
	for _, l := range specs {
		if !isLevel2(l) {
			continue
		}
		var whys []string
		for _, p := range l.Plans {
			if w := p.TritonLeftOut; w != "" && !slices.Contains(whys, w) {
				whys = append(whys, w)
			}
		}
		if len(whys) > 0 {
			out = append(out, NoTriton{Spec: l.Spec().Name, Why: strings.Join(whys, "; ")})
		}
	}
	return out
}
