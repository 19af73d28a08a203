// Command verify is the verifier's GPU tier: it compiles every emitted CUDA
// kernel for sm_80 and sm_90 (registers, spills, shared memory), runs each
// one in its own child process on the GPU against a float64 reference,
// optionally times it, and writes a report.
//
//	verify [-specs a,b|file.yaml] [-random N -seed S] [-time] [-json out.json]
//	verify -gpus 8 -time -json out.json          # one child per GPU, merged
//	verify -shard 2/8 -json shard2.json          # one slice of the items
//	verify -merge a.json b.json ... -json out.json
//
// Built without the "cuda" tag it still plans, compiles, shards and merges,
// and reports every kernel run as not_run (see make verifier for the GPU
// build). Exit status: 0 when nothing failed, 1 when an item is incorrect,
// failed or has an invalid spec, 2 on a usage or setup error.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"convtgen/verify"
	"convtgen/verify/gpu"
	"convtgen/verify/harness"
)

// buildCommit is the default of -commit: make verifier sets it with
// -ldflags "-X main.buildCommit=...", since the GPU host may have no git.
var buildCommit string

func main() {
	if len(os.Args) == 3 && (os.Args[1] == "-run-one" || os.Args[1] == "--run-one") {
		runOne(os.Args[2])
		return
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// runOne is the child process of one kernel: it prints one JSON line with
// the measurements and exits 0; a crash is the parent's to report.
func runOne(arg string) {
	var out gpu.RunOutput
	if j, err := gpu.DecodeJob(arg); err != nil {
		out.Error = err.Error()
	} else {
		out = gpu.Execute(j)
	}
	b, err := json.Marshal(out)
	if err != nil {
		b, _ = json.Marshal(gpu.RunOutput{Error: "encoding the result: " + err.Error()})
	}
	fmt.Println(string(b))
}

func run(args []string, stdout, stderr io.Writer) int {
	var o gpu.Options
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o.Register(fs)
	merge := fs.Bool("merge", false, "combine the report files given as arguments (with -json: into that file)")
	tiers := fs.String("tiers", "kernel", "tiers to run, comma-separated: kernel (compile, run and check each kernel) and e2e (the embedded evaluator-style harness over out/, timed with -time)")
	e2eJSON := fs.String("e2e-json", "e2e.json", "with the e2e tier: where the harness writes its results")
	python := fs.String("python", "python3", "with the e2e tier: the python that has torch")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return 2
	}
	kernelTier, e2eTier, err := parseTiers(*tiers)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	if o.Commit == "" {
		o.Commit = buildCommit
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	if *merge {
		return mergeReports(files, o.JSON, stdout, stderr)
	}
	if len(files) > 0 {
		return fail(fmt.Errorf("unexpected arguments %q (only -merge takes files)", files))
	}
	if err := o.Check(); err != nil {
		return fail(err)
	}
	if !gpu.Enabled && !o.CompileOnly {
		fmt.Fprintln(stderr, "verify: built without GPU support (no -tags cuda): kernels are compiled but not run (not_run); build with make verifier")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	if o.Root, err = filepath.Abs(o.Root); err != nil {
		return fail(err)
	}
	work := o.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "verify-"); err != nil {
			return fail(err)
		}
		if o.Keep {
			fmt.Fprintln(stderr, "verify: work folder", work)
		} else {
			defer os.RemoveAll(work)
		}
	} else if work, err = filepath.Abs(work); err != nil {
		return fail(err)
	}
	o.Work = work

	status := 0
	if kernelTier {
		var rep *gpu.Report
		if o.GPUs > 0 {
			rep, err = runShards(ctx, &o, exe, stderr)
		} else {
			rep, err = runLocal(ctx, &o, exe, stderr)
		}
		if err != nil {
			return fail(err)
		}
		status = finish(rep, o.JSON, stdout, stderr)
	}
	if e2eTier {
		err := harness.Run(ctx, *python, o.Work, o.Time, *e2eJSON, []string{filepath.Join(o.Root, "out")}, stdout, stderr)
		var exit *exec.ExitError
		switch {
		case errors.As(err, &exit):
			status = max(status, 1) // some submission did not pass; the harness said which
		case err != nil:
			return fail(err)
		}
	}
	return status
}

// parseTiers reads -tiers.
func parseTiers(s string) (kernel, e2e bool, err error) {
	for _, t := range strings.Split(s, ",") {
		switch strings.TrimSpace(t) {
		case "kernel":
			kernel = true
		case "e2e":
			e2e = true
		default:
			return false, false, fmt.Errorf("-tiers %q: tiers are kernel and e2e", s)
		}
	}
	return kernel, e2e, nil
}

// runLocal verifies this process's shard of the items on device 0.
func runLocal(ctx context.Context, o *gpu.Options, exe string, stderr io.Writer) (*gpu.Report, error) {
	items, err := gpu.Items(o, verify.Kernels, o.Work)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath(o.NVCC); err != nil {
		return nil, fmt.Errorf("-nvcc %s: %w", o.NVCC, err)
	}
	rep := gpu.NewReport(o, o.Root, o.Commit)
	fmt.Fprintf(stderr, "verify: %d items, shard %s, on %s\n", len(items), o.Shard, rep.GPU)
	rep.Results = gpu.NewRunner(o, o.Work, exe, stderr).Run(ctx, items)
	return rep, nil
}

// runShards starts one child per GPU, each with its own
// CUDA_VISIBLE_DEVICES and shard, and merges their reports. A shard that
// leaves no report has its items reported as failed.
func runShards(ctx context.Context, o *gpu.Options, exe string, stderr io.Writer) (*gpu.Report, error) {
	items, err := gpu.Items(o, verify.Kernels, filepath.Join(o.Work, "parent"))
	if err != nil {
		return nil, err
	}
	n := o.GPUs
	type child struct {
		opts gpu.Options
		cmd  *exec.Cmd
		err  error
	}
	children := make([]*child, n)
	parentDevices := os.Getenv("CUDA_VISIBLE_DEVICES")
	for i := range n {
		c := &child{opts: o.ShardOptions(i, n, filepath.Join(o.Work, fmt.Sprintf("shard%d.json", i)), filepath.Join(o.Work, fmt.Sprintf("shard%d", i)))}
		dev, err := gpu.VisibleDevice(parentDevices, i)
		if err != nil {
			return nil, err
		}
		c.cmd = exec.CommandContext(ctx, exe, c.opts.Args()...)
		// On an interrupt, let the shard finish its report (the items not
		// yet run become not_run) rather than killing it outright.
		c.cmd.Cancel = func() error { return c.cmd.Process.Signal(os.Interrupt) }
		c.cmd.WaitDelay = time.Minute
		c.cmd.Env = append(os.Environ(), "CUDA_VISIBLE_DEVICES="+dev)
		c.cmd.Stdout = io.Discard // each shard's table; the merged one is printed below
		c.cmd.Stderr = stderr     // progress lines, prefixed with the shard
		if err := c.cmd.Start(); err != nil {
			return nil, err
		}
		children[i] = c
	}
	var reports []*gpu.Report
	for i, c := range children {
		c.err = c.cmd.Wait()
		r, err := gpu.ReadReport(c.opts.JSON)
		if err != nil {
			// No report: every item of the shard failed with the shard.
			shard := gpu.Shard{I: i, N: n}
			r = gpu.NewReport(&c.opts, o.Root, o.Commit)
			why := fmt.Sprintf("shard %s left no report (%v; exit: %v)", shard, err, c.err)
			fmt.Fprintln(stderr, "verify:", why)
			for k := range items {
				if shard.Owns(items[k].Index) {
					res := items[k].Result()
					res.Disposition, res.Reason = gpu.Failed, why
					r.Results = append(r.Results, res)
				}
			}
		}
		reports = append(reports, r)
	}
	return gpu.Merge(reports)
}

func mergeReports(files []string, out string, stdout, stderr io.Writer) int {
	if len(files) == 0 {
		fmt.Fprintln(stderr, "verify: -merge needs report files")
		return 2
	}
	var reports []*gpu.Report
	for _, f := range files {
		r, err := gpu.ReadReport(f)
		if err != nil {
			fmt.Fprintln(stderr, "verify:", err)
			return 2
		}
		reports = append(reports, r)
	}
	rep, err := gpu.Merge(reports)
	if err != nil {
		fmt.Fprintln(stderr, "verify:", err)
		return 2
	}
	return finish(rep, out, stdout, stderr)
}

// finish writes the JSON report, prints the table and sets the exit status.
func finish(rep *gpu.Report, jsonPath string, stdout, stderr io.Writer) int {
	if jsonPath != "" {
		if err := gpu.WriteReport(jsonPath, rep); err != nil {
			fmt.Fprintln(stderr, "verify:", err)
			return 2
		}
	}
	gpu.WriteSummary(stdout, rep)
	if rep.Bad() {
		return 1
	}
	return 0
}

// parseInterspersed parses flags that may come after positional arguments
// (verify -merge a.json b.json -json out.json) and returns the positional
// ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
