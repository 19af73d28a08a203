package gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"convtgen/gen/choose"
	"convtgen/gen/plan"
	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

// Tuning: every spec's candidate kernel choices are rendered as separate
// problems (WriteTune), timed on a GPU by the harness, and the fastest
// correct one is written back into the spec (ApplyTune), so `go generate`
// reproduces the tuned kernel without a GPU.

// Candidate is one kernel choice tried for a spec and backend. The spec's
// own choice is a candidate too (Current): its times come from the run
// over out/.
type Candidate struct {
	Current   bool
	Backend   string      // cuda or triton
	Target    string      // the target it is planned and timed for (plan.Target.Name)
	Variant   string      // problem folder name: the spec's name, or <spec>_<target>_t<i> (cuda), <spec>_<target>_x<i> (triton)
	Spec      string      // spec name
	SpecPath  string      // spec file, relative to the root
	Precision string      // fp32 or 3xtf32
	CUDA      spec.CUDA   `json:",omitempty"` // cuda: the family, fully resolved, as the plan chose it
	Triton    spec.Triton `json:",omitempty"` // triton: fully resolved, as the generator chose it
}

// Candidates plans the spec's own choice and every other candidate of one
// spec, for each of its targets and backends; infeasible and duplicate
// choices are skipped.
func Candidates(l Loaded) []Candidate {
	var out []Candidate
	for _, p := range l.Plans {
		if slices.Contains(p.Spec.Kernel.Backends, "cuda") {
			out = append(out, cudaCandidates(l.Path, p)...)
		}
		if slices.Contains(p.Spec.Kernel.Backends, "triton") {
			out = append(out, TritonCandidates(l.Path, p)...)
		}
	}
	return out
}

// variantName is a candidate's problem folder: the spec's name, target and
// label.
func variantName(p *plan.Plan, label string) string {
	return p.Spec.Name + "_" + p.Target.Name + "_" + label
}

// VariantSpec is the spec a candidate's variant name (variantName) of the
// given target was made from.
func VariantSpec(variant, target string) string {
	label := variant[strings.LastIndex(variant, "_")+1:]
	return strings.TrimSuffix(variant, "_"+target+"_"+label)
}

// TritonCandidates is the Triton half of Candidates for one target's plan.
func TritonCandidates(path string, own *plan.Plan) []Candidate {
	tg := own.Target.Name
	out := []Candidate{{Current: true, Backend: "triton", Target: tg, Variant: own.Spec.Name, Spec: own.Spec.Name, SpecPath: path,
		Triton: resolvedTriton(own)}}
	out[0].Precision = out[0].Triton.Precision
	for i, t := range choose.TritonCandidates(out[0].Triton) {
		s := *own.Spec
		s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: t}
		s.Name = variantName(own, fmt.Sprintf("x%d", i+1))
		p, err := plan.New(&s, own.Target)
		if err != nil {
			continue
		}
		r := resolvedTriton(p)
		if slices.ContainsFunc(out, func(c Candidate) bool { return c.Triton == r }) {
			continue
		}
		out = append(out, Candidate{Backend: "triton", Target: tg, Variant: s.Name, Spec: own.Spec.Name, SpecPath: path,
			Precision: r.Precision, Triton: r})
	}
	return out
}

// kernel is the spec kernel section that renders the candidate alone.
func (c Candidate) kernel() spec.Kernel {
	if c.Backend == "triton" {
		return spec.Kernel{Backends: []string{"triton"}, Triton: c.Triton}
	}
	return spec.Kernel{Backends: []string{"cuda"}, CUDA: c.CUDA}
}

// Label names a candidate within its spec ("x15", "t3"): its variant's
// suffix, what WriteTune's only filter takes.
func (c Candidate) Label() string { return strings.TrimPrefix(c.Variant, c.Spec+"_"+c.Target+"_") }

// Choice is the candidate's kernel choice as the spec writes it.
func (c Candidate) Choice() string {
	if c.Backend == "triton" {
		return c.Triton.String()
	}
	return c.CUDA.String()
}

// resolvedTriton is the spec form of the Triton choices the generator
// makes for a plan, every field set.
func resolvedTriton(p *plan.Plan) spec.Triton { return resolvedFrom(p, newTritonLayout(p)) }

// resolvedFrom is resolvedTriton from the plan's view.
func resolvedFrom(p *plan.Plan, v *TritonView) spec.Triton {
	return spec.Triton{Precision: p.Spec.Kernel.PrecisionFor("triton"), BlockM: v.BlockM, BlockN: v.BlockN, BlockK: v.BlockK,
		Warps: v.NumWarps, Stages: v.NumStages, ChannelsLast: v.ChannelsLast, FuseW: v.FuseW, PadInput: v.PadInput, SplitWeight: v.SplitWeight, FlatK: v.FlatK,
		FoldW: foldSpec(v.WFold)}
}

// cudaCandidates is the CUDA half of Candidates for one target's plan.
func cudaCandidates(path string, ownPlan *plan.Plan) []Candidate {
	own, tg := ownPlan.Spec, ownPlan.Target.Name
	mine := ownPlan.Tile.Family()
	out := []Candidate{{Current: true, Backend: "cuda", Target: tg, Variant: own.Name, Spec: own.Name, SpecPath: path,
		Precision: mine.Precision(), CUDA: ownPlan.Tile.Choice()}}
	kernels := choose.CUDASpace(own.Problem.Conv, mine)
	if ownPlan.Target.WGMMA {
		// The chooser weighs every wgmma tile with bulk weight copies too:
		// those twins follow the space, in WGMMAKernels' order.
		kernels = append(kernels, choose.BulkTwins(choose.WGMMAKernels())...)
	}
	// Then the tiles that split their reduction among blocks, and the own
	// wgmma tile with its phases shared among blocks.
	kernels = append(kernels, choose.SplitKernels()...)
	kernels = append(kernels, choose.PhaseSplits(mine)...)
	for i, k := range kernels {
		s := *own
		s.Kernel = spec.Kernel{Backends: []string{"cuda"}, CUDA: spec.CUDA{Family: k}}
		// Numbered by the list, skipped ones too: a label names the same
		// choice in every spec (what -only filters on).
		s.Name = variantName(ownPlan, fmt.Sprintf("t%d", i+1))
		p, err := plan.New(&s, ownPlan.Target)
		if err != nil || p.MMASyncSpills() || hasChoice(out, p.Tile.Choice()) {
			continue
		}
		out = append(out, Candidate{Backend: "cuda", Target: tg, Variant: s.Name, Spec: own.Name, SpecPath: path,
			Precision: k.Precision(), CUDA: p.Tile.Choice()})
	}
	return out
}

func hasChoice(cs []Candidate, t spec.CUDA) bool {
	for _, c := range cs {
		if c.Backend == "cuda" && c.CUDA == t {
			return true
		}
	}
	return false
}

// ManifestFile names the candidates' list inside a tuning folder.
const ManifestFile = "manifest.json"

// TuneOptions narrow what WriteTune renders; the zero value renders every
// candidate of every spec.
type TuneOptions struct {
	// Only: just these candidate labels ("x15", "t3") beside the specs' own
	// choices, so that a GPU run times what is new and nothing else.
	Only []string
	// Top: where the chooser ranks a backend's candidates (the spec leaves
	// the choice open), just its Top cheapest estimates, so that a run can
	// time the model's nearest rivals of its choice over many specs (the
	// zoo); a spec that gives its choice keeps every candidate. 0: all.
	Top int
	// Under: only the specs whose path starts with it ("specs/zoo/").
	Under string
}

// WriteTune renders the specs' candidates into dir (one problem folder
// each, and dir/specs/<variant>.yaml) and writes the manifest. It returns
// the number of candidates, the specs' own choices included.
func WriteTune(root, dir string, o TuneOptions) (int, error) {
	specs, err := LoadAll(root)
	if err != nil {
		return 0, err
	}
	r, err := NewRenderer()
	if err != nil {
		return 0, err
	}
	var all []Candidate
	for _, l := range specs {
		if !strings.HasPrefix(l.Path, o.Under) {
			continue
		}
		top, err := topChoices(root, l, o.Top)
		if err != nil {
			return 0, err
		}
		for _, c := range Candidates(l) {
			if !c.Current && len(o.Only) > 0 && !slices.Contains(o.Only, c.Label()) {
				continue
			}
			if ranked, ok := top[c.Backend+" "+c.Target]; !c.Current && ok && !ranked[c.Choice()] {
				continue
			}
			all = append(all, c)
			if c.Current {
				continue // rendered in out/ already
			}
			tg, err := plan.TargetNamed(c.Target)
			if err != nil {
				return 0, err
			}
			s := *l.Spec()
			s.Name, s.Kernel = c.Variant, c.kernel()
			p, err := plan.New(&s, tg)
			if err != nil {
				return 0, err
			}
			files, err := r.Render([]*plan.Plan{p}, l.Path)
			if err != nil {
				return 0, err
			}
			for _, f := range files {
				if err := safeio.WriteWhole(filepath.Join(dir, f.Path), f.Data); err != nil {
					return 0, err
				}
			}
			if c.Backend != "cuda" {
				continue
			}
			// A CUDA candidate as a spec file too, so the kernel verifier
			// can time it (bin/verify -specs) without a PyTorch build.
			src, err := os.ReadFile(filepath.Join(root, l.Path))
			if err == nil {
				src, err = setKernel(src, c, c.Variant, "tuning candidate of "+l.Path)
			}
			if err == nil {
				err = safeio.WriteWhole(filepath.Join(dir, "specs", c.Variant+".yaml"), src)
			}
			if err != nil {
				return 0, err
			}
		}
	}
	data, err := json.MarshalIndent(all, "", "  ")
	if err != nil {
		return 0, err
	}
	return len(all), safeio.WriteWhole(filepath.Join(dir, ManifestFile), append(data, '\n'))
}

// topChoices is, per "backend target" the chooser ranks for the spec, its
// n cheapest choices (in the spec's form); none for n 0.
func topChoices(root string, l Loaded, n int) (map[string]map[string]bool, error) {
	if n <= 0 {
		return nil, nil
	}
	// The spec as written: the loaded plans hold the chooser's picks.
	data, err := safeio.ReadRegular(filepath.Join(root, l.Path), safeio.MaxSpecSize)
	if err != nil {
		return nil, err
	}
	s, err := spec.Parse(l.Path, data)
	if err != nil {
		return nil, err
	}
	top := map[string]map[string]bool{}
	for _, t := range plan.Targets {
		_, d := Chooser.Choose(s, t)
		for backend, rs := range map[string][]choose.Ranked{"cuda": d.CUDA, "triton": d.Triton} {
			if rs == nil {
				continue
			}
			set := map[string]bool{}
			for _, r := range rs[:min(n, len(rs))] {
				set[r.Resolved] = true
			}
			top[backend+" "+t.Name] = set
		}
	}
	return top, nil
}

// Timing is what tuning needs of one result, from the harness (max_rel_l2)
// or the kernel verifier (rel_l2).
type Timing struct {
	Spec        string        `json:"spec"`
	Backend     string        `json:"backend"`
	Target      string        `json:"target"`
	Disposition string        `json:"disposition"`
	Reason      string        `json:"reason"`
	MaxRelL2    *lenientFloat `json:"max_rel_l2"`
	RelL2       *lenientFloat `json:"rel_l2"`
	TimeMS      *struct {
		Mean   float64 `json:"mean"`
		Median float64 `json:"median"`
	} `json:"time_ms"`
}

// HarnessResults is the part of a results document tuning reads: the
// harness lists "results", the kernel verifier "items".
type HarnessResults struct {
	GPU     string   `json:"gpu"`
	Date    string   `json:"date"`
	Results []Timing `json:"results"`
	Items   []Timing `json:"items"`
}

// Tuning rules: a winner needs accuracy headroom, half the 1e-5 gate, so
// that fresh inputs cannot push it over (a tile's error moves by up to a
// quarter between draws of inputs), and must beat the spec's current
// choice by more than run-to-run noise.
const (
	TuneMaxRelL2     = 5e-6
	tuneMaxRelL2Text = "5e-6" // as the notes print it
	TuneMinGain      = 0.03
)

func (t Timing) relL2() (float64, bool) {
	switch {
	case t.MaxRelL2 != nil:
		return float64(*t.MaxRelL2), true
	case t.RelL2 != nil:
		return float64(*t.RelL2), true
	}
	return 0, false
}

// lenientFloat reads a JSON number or the strings the kernel verifier
// writes for non-finite values ("NaN", "+Inf").
type lenientFloat float64

func (f *lenientFloat) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		v, err := strconv.ParseFloat(s, 64)
		*f = lenientFloat(v)
		return err
	}
	var v float64
	err := json.Unmarshal(b, &v)
	*f = lenientFloat(v)
	return err
}

// Winner is the chosen candidate of one spec, with the evidence.
type Winner struct {
	Candidate
	MeanMS float64
	Tried  int // candidates that passed and were timed
	// Replaced: where the spec's current choice failed or was incorrect
	// in the runs, which and why ("failed: ...", "was incorrect: ..."); the
	// winner then needs no margin over it.
	Replaced string
	// GPU and Date: of the run that timed it (ApplyTune's own where unset).
	GPU, Date string
}

// PickWinners chooses, per spec, the fastest candidate that passed with
// error at most TuneMaxRelL2, over the given runs (the current choices'
// times and the other candidates'). A candidate replaces the spec's
// current choice only when it is TuneMinGain faster, or when the current
// choice failed or was wrong (Replaced says how). Specs whose current
// choice has no other verdict (not run, no error figure) are left out.
func PickWinners(cands []Candidate, runs ...HarnessResults) []Winner {
	type key struct{ variant, backend, target string }
	timings := map[key]Timing{}
	runOf := map[key]*HarnessResults{}
	for i, res := range runs {
		for _, t := range append(res.Results, res.Items...) {
			timings[key{t.Spec, t.Backend, t.Target}] = t
			runOf[key{t.Spec, t.Backend, t.Target}] = &runs[i]
		}
	}
	usable := func(c Candidate) (float64, bool) {
		t, ok := timings[key{c.Variant, c.Backend, c.Target}]
		err, known := t.relL2()
		if !ok || t.Disposition != "passed" || t.TimeMS == nil || !known || !(err <= TuneMaxRelL2) {
			return 0, false
		}
		return t.TimeMS.Mean, true
	}
	// One group per spec, backend and target, in the candidates' order.
	type group struct{ spec, backend, target string }
	var order []group
	groups := map[group][]Candidate{}
	for _, c := range cands {
		g := group{c.Spec, c.Backend, c.Target}
		if _, ok := groups[g]; !ok {
			order = append(order, g)
		}
		groups[g] = append(groups[g], c)
	}
	var out []Winner
	for _, g := range order {
		var w *Winner
		tried, currentOK, replaced := 0, false, ""
		for _, c := range groups[g] {
			if c.Current {
				replaced = failedHow(timings[key{c.Variant, c.Backend, c.Target}])
			}
			ms, ok := usable(c)
			if !ok {
				continue
			}
			tried++
			if c.Current {
				currentOK = true
				ms *= 1 - TuneMinGain // the incumbent keeps its place unless clearly beaten
			}
			if w == nil || ms < w.MeanMS {
				run := runOf[key{c.Variant, c.Backend, c.Target}]
				w = &Winner{Candidate: c, MeanMS: ms, GPU: run.GPU, Date: run.Date}
			}
		}
		if w == nil || !currentOK && replaced == "" {
			continue // nothing to compare the candidates with
		}
		w.Replaced = replaced
		if w.Current {
			w.MeanMS /= 1 - TuneMinGain
		}
		w.Tried = tried
		out = append(out, *w)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Spec != out[b].Spec {
			return out[a].Spec < out[b].Spec
		}
		if out[a].Backend != out[b].Backend {
			return out[a].Backend < out[b].Backend
		}
		return out[a].Target < out[b].Target
	})
	return out
}

// ApplyTune writes each winner's CUDA family or Triton choices into its
// spec file,
// with a comment saying where and when it was measured (the winner's run,
// or gpu and date where it has none).
func ApplyTune(root string, winners []Winner, gpu, date string) error {
	for _, w := range winners {
		// The path comes from a results file: write back only into a spec
		// LoadAll would read.
		if !specPathRe.MatchString(w.SpecPath) || !strings.HasPrefix(w.SpecPath, SpecDir+"/") || strings.Contains("/"+w.SpecPath+"/", "/../") {
			return fmt.Errorf("%s: not a spec path under %s/", strconv.QuoteToASCII(w.SpecPath), SpecDir)
		}
		path := filepath.Join(root, filepath.FromSlash(w.SpecPath))
		data, err := safeio.ReadRegular(path, safeio.MaxSpecSize)
		if err != nil {
			return fmt.Errorf("%s: %w", w.SpecPath, err)
		}
		what, how := "cuda", "kernel"
		if w.Backend == "triton" {
			what, how = "triton", "end to end"
		}
		where, when := gpu, date
		if w.GPU != "" && w.Date != "" {
			where, when = w.GPU, w.Date[:min(10, len(w.Date))]
		}
		if w.Target == plan.SM80.Name {
			// Off an A100 the sm80 file runs its compute_80 PTX (the sm_80 code path).
			how += ", compute_80 PTX"
		}
		s, err := spec.Parse(w.SpecPath, data)
		if err != nil {
			return err
		}
		note := fmt.Sprintf("%s tuned on %s, %s: %.3f ms mean (%s), fastest of the %d candidates that passed with error <= %s",
			what, where, when, w.MeanMS, how, w.Tried, tuneMaxRelL2Text)
		if w.Replaced != "" {
			note += fmt.Sprintf(" (replacing a choice that %s)", clip(w.Replaced, 120))
		}
		out, err := setKernel(data, w.Candidate, "", hashedNote(note, ProblemHash(s, w.Target)))
		if err != nil {
			return fmt.Errorf("%s: %w", w.SpecPath, err)
		}
		if err := safeio.WriteWhole(path, out); err != nil {
			return err
		}
	}
	return nil
}

// setKernel rewrites the candidate's target section of a spec,
// kernel.<target>.cuda or for a Triton candidate kernel.<target>.triton
// (and its name, when one is given), keeping the rest of the document and
// its comments as they were. The comment goes above the section it is
// about.
func setKernel(data []byte, w Candidate, name, note string) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	root := doc.Content[0]
	kernel := spec.MapValue(root, "kernel")
	if kernel == nil {
		kernel = &yaml.Node{Kind: yaml.MappingNode}
		root.Content = append(root.Content, spec.PlainScalar("kernel"), kernel)
	}
	if name != "" {
		setMapValue(root, "name", spec.PlainScalar(name))
	}
	field, flow := "cuda", w.CUDA.String()
	if w.Backend == "triton" {
		field, flow = "triton", w.Triton.String()
	}
	var choice yaml.Node // the choice's own flow mapping, as spec prints it
	if err := yaml.Unmarshal([]byte(flow), &choice); err != nil {
		return nil, err
	}
	section := spec.MapValue(kernel, w.Target)
	if section == nil {
		section = &yaml.Node{Kind: yaml.MappingNode}
		kernel.Content = append(kernel.Content, spec.PlainScalar(w.Target), section)
	}
	setMapValue(section, field, choice.Content[0])
	parent, key := section, field
	for i := 0; i+1 < len(parent.Content); i += 2 {
		if parent.Content[i].Value == key {
			parent.Content[i].HeadComment = "# " + note
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

func setMapValue(m *yaml.Node, key string, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content[i+1] = v
			return
		}
	}
	m.Content = append(m.Content, spec.PlainScalar(key), v)
}

// ReadManifest loads a tuning folder's candidate list.
func ReadManifest(path string) ([]Candidate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cs := make([]Candidate, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &cs[i]); err != nil {
			return nil, fmt.Errorf("%s: candidate %d: %w", path, i+1, err)
		}
	}
	return cs, nil
}

// failedHow says how a run failed its choice ("failed: REASON", "was
// incorrect: REASON"), "" where it did not.
func failedHow(t Timing) string {
	why := strings.Join(strings.Fields(t.Reason), " ")
	switch t.Disposition {
	case "failed":
		return "failed: " + why
	case "incorrect":
		return "was incorrect: " + why
	}
	return ""
}

// clip is s cut to at most n bytes at a word boundary, "..." marking a cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if i := strings.LastIndexByte(s[:n], ' '); i > 0 {
		n = i
	}
	return s[:n] + "..."
}

// foldSpec is fold_w as a spec writes it: unset for no fold.
func foldSpec(outputs int) int {
	if outputs > 1 {
		return outputs
	}
	return 0
}
