package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"convtgen/gen/plan"
	"convtgen/verify"
)

// Runner verifies a list of items: compile everything up front (in
// parallel), then run each kernel in its own child process, one after the
// other, so a fault in one kernel becomes that kernel's failure and the run
// goes on. Its hooks default to the real thing and are replaced in tests.
type Runner struct {
	Opts   *Options
	Work   string    // cubins go under Work/cubin
	Stderr io.Writer // progress lines

	// Source extracts the kernel-only CUDA source from a submission.
	Source func(src []byte) (string, error)
	// Compile compiles source for arch into out (a cubin, or PTX for a
	// compute_XY arch) and reports the kernels' registers, spills and
	// shared memory (a cubin's; PTX has none).
	Compile func(ctx context.Context, nvcc, source, arch, out string, k verify.Kernel) (ArchInfo, error)
	// Exec runs one job and returns the child's measurements.
	Exec func(ctx context.Context, j *Job) (RunOutput, error)
	// Enabled says whether kernels can run at all (the "cuda" build).
	Enabled bool
}

// NewRunner is a runner with the real hooks: verify.KernelSource and
// verify.CompileKernel, and a child process of exe per kernel.
func NewRunner(o *Options, work, exe string, stderr io.Writer) *Runner {
	return &Runner{
		Opts: o, Work: work, Stderr: stderr,
		Source:  verify.KernelSource,
		Compile: compileKernel,
		Exec:    func(ctx context.Context, j *Job) (RunOutput, error) { return ExecChild(ctx, exe, j) },
		Enabled: Enabled,
	}
}

// Run verifies the items of the options' shard and returns their results,
// in item order.
func (r *Runner) Run(ctx context.Context, items []Item) []Result {
	o := r.Opts
	shard, _ := ParseShard(o.Shard)
	var owned []*Item
	for i := range items {
		if shard.Owns(items[i].Index) {
			owned = append(owned, &items[i])
		}
	}
	results := make([]Result, len(owned))
	for i, it := range owned {
		results[i] = it.Result()
	}
	r.compileAll(ctx, owned, results)

	prefix := ""
	if shard.N > 1 {
		prefix = "[shard " + shard.String() + "] "
	}
	for i, it := range owned {
		res := &results[i]
		if res.Disposition == "" && ctx.Err() != nil {
			res.Disposition, res.Reason = NotRun, "interrupted"
		}
		if res.Disposition == "" {
			r.runOne(ctx, it, res)
		}
		fmt.Fprintf(r.Stderr, "%s[%d/%d] %s\n", prefix, i+1, len(owned), Progress(res))
	}
	return results
}

// compileAll compiles every item still undecided for its target's builds
// (Builds), o.Jobs compiles at a time; a failure decides the item.
func (r *Runner) compileAll(ctx context.Context, owned []*Item, results []Result) {
	o := r.Opts
	type task struct {
		item int
		arch string
	}
	var tasks []task
	kernels := 0
	sources := make([]string, len(owned))
	for i, it := range owned {
		if results[i].Disposition != "" {
			continue
		}
		t, err := plan.TargetNamed(it.Kernel.Target)
		if err != nil {
			results[i].Disposition, results[i].Reason = Failed, err.Error()
			continue
		}
		src, err := r.readSource(it)
		if err != nil {
			results[i].Disposition, results[i].Reason = Failed, err.Error()
			continue
		}
		sources[i], kernels = src, kernels+1
		results[i].Arch = map[string]ArchInfo{}
		for _, arch := range Builds(t) {
			tasks = append(tasks, task{i, arch})
		}
	}
	if len(tasks) == 0 {
		return
	}
	start := time.Now()
	fmt.Fprintf(r.Stderr, "compiling %d builds of %d kernels, each for its target (%d at a time)\n", len(tasks), kernels, max(1, o.Jobs))
	defer func() { fmt.Fprintf(r.Stderr, "compiled in %.1fs\n", time.Since(start).Seconds()) }()
	var mu sync.Mutex
	errs := make(map[int][]string)
	work := make(chan task)
	var wg sync.WaitGroup
	for range max(1, o.Jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for t := range work {
				it := owned[t.item]
				info, err := r.Compile(ctx, o.NVCC, sources[t.item], t.arch, r.build(it, t.arch), it.Kernel)
				mu.Lock()
				if err != nil {
					errs[t.item] = append(errs[t.item], t.arch+": "+oneLine(err))
				}
				if info != (ArchInfo{}) {
					results[t.item].Arch[t.arch] = info
				}
				mu.Unlock()
			}
		}()
	}
	for _, t := range tasks {
		work <- t
	}
	close(work)
	wg.Wait()
	for i, e := range errs {
		slices.Sort(e)
		results[i].Disposition, results[i].Reason = Failed, "compile "+strings.Join(e, "; ")
	}
}

func (r *Runner) readSource(it *Item) (string, error) {
	path := it.Kernel.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(r.Opts.Root, filepath.FromSlash(path))
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	src, err := r.Source(data)
	if err != nil {
		return "", fmt.Errorf("%s: extracting the kernel source: %w", it.Kernel.File, err)
	}
	return src, nil
}

// build is where the item's build for arch goes: a cubin, or PTX.
func (r *Runner) build(it *Item, arch string) string {
	ext := ".cubin"
	if IsPTX(arch) {
		ext = ".ptx"
	}
	return filepath.Join(r.Work, "cubin", fmt.Sprintf("%03d_%s_%s", it.Index, it.Kernel.Spec, it.Kernel.Target), arch+ext)
}

// runOne runs a compiled item and judges it.
func (r *Runner) runOne(ctx context.Context, it *Item, res *Result) {
	o := r.Opts
	switch {
	case o.CompileOnly:
		res.Disposition, res.Reason = NotRun, "-compile-only"
		return
	case !r.Enabled:
		res.Disposition, res.Reason = NotRun, ErrNoGPU.Error()
		return
	}
	t, _ := plan.TargetNamed(it.Kernel.Target) // compileAll decided an item without one
	builds := map[string]string{}
	for _, arch := range Builds(t) {
		builds[arch] = r.build(it, arch)
	}
	j := &Job{
		Kernel: it.Kernel, InputDist: it.InputDist, Builds: builds,
		Seed: it.Seed(o.Seed), Store: StoreOf(it.plan),
		Compare: CompareConfig{
			Tol: o.Tol, FullMax: o.FullMax, FullMACs: DefaultCompare.FullMACs, Samples: o.Samples,
			Seed: it.Seed(o.Seed) + 1,
		},
	}
	if o.Time {
		j.Timing = &TimingConfig{Warmup: o.Warmup, Runs: o.Runs, FlushBytes: DefaultTiming.FlushBytes}
	}
	cctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	start := time.Now()
	out, err := r.Exec(cctx, j)
	res.Seconds = time.Since(start).Seconds()
	if err != nil {
		res.Disposition, res.Reason = Failed, err.Error()
		return
	}
	res.Apply(out, o.Tol)
}

// ErrNoGPU is what a build without the "cuda" tag answers to GPU work.
var ErrNoGPU = errors.New("verify was built without GPU support (rebuild with -tags cuda: make verifier)")

// ExecChild runs `exe -run-one JOB` and reads the RunOutput it prints. A
// crash, a kill (timeout) or garbage on stdout is the kernel's failure,
// with the end of the child's stderr as the reason.
func ExecChild(ctx context.Context, exe string, j *Job) (RunOutput, error) {
	enc, err := j.Encode()
	if err != nil {
		return RunOutput{}, err
	}
	cmd := exec.CommandContext(ctx, exe, "-run-one", enc)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	runErr := cmd.Run()
	out, parseErr := ParseRunOutput(stdout.Bytes())
	if runErr == nil && parseErr == nil {
		return out, nil
	}
	why := "child process: "
	switch {
	case ctx.Err() != nil:
		why += "timed out (" + ctx.Err().Error() + ")"
	case runErr != nil:
		why += runErr.Error()
	default:
		why += parseErr.Error()
	}
	if tail := tail(stderr.String()+stdout.String(), 600); tail != "" {
		why += ": " + tail
	}
	return RunOutput{}, errors.New(why)
}

// ParseRunOutput reads the last JSON line of a child's stdout (anything a
// library printed before it is ignored).
func ParseRunOutput(stdout []byte) (RunOutput, error) {
	lines := strings.Split(strings.TrimSpace(string(stdout)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "{") {
			var out RunOutput
			if err := json.Unmarshal([]byte(l), &out); err != nil {
				return RunOutput{}, fmt.Errorf("bad result line: %w", err)
			}
			return out, nil
		}
	}
	return RunOutput{}, errors.New("printed no result")
}

func tail(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// Progress is an item's one-line status.
func Progress(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-13s %s %s", r.Disposition, r.Spec, r.Target)
	if r.Loaded != "" {
		fmt.Fprintf(&b, " (%s)", r.Loaded)
	}
	if r.RelL2 != nil {
		fmt.Fprintf(&b, "  rel_l2 %.2g", float64(*r.RelL2))
	}
	if r.Compared != nil {
		fmt.Fprintf(&b, " (%s %d)", r.Compared.Mode, r.Compared.Count)
	}
	if r.Time != nil {
		fmt.Fprintf(&b, "  %.4f ms (%.0f GFLOP/s, %.1f%% of floor)", r.Time.MedianMS, r.GFLOPS, 100*r.FloorFrac)
	}
	if r.Reason != "" {
		fmt.Fprintf(&b, "  %s", tail(r.Reason, 300))
	}
	if r.Seconds > 0 {
		fmt.Fprintf(&b, "  [%.1fs]", r.Seconds)
	}
	return b.String()
}
