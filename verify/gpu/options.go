package gpu

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Options are the verify command's settings. They are registered as flags
// by Register, and Args turns them back into a command line, which is how
// -gpus hands each child process its part of the work.
type Options struct {
	Root        string
	Specs       string // comma-separated spec names (from the registry) or spec files (*.yaml); "" = every registered kernel
	Random      int
	Seed        int64
	NVCC        string
	Time        bool
	JSON        string
	Shard       string
	GPUs        int
	Jobs        int
	Work        string
	Keep        bool
	Timeout     time.Duration
	Tol         float64
	Samples     int
	FullMax     int
	Runs        int
	Warmup      int
	CompileOnly bool
	Commit      string
	Mutate      bool
}

// Register defines the flags on fs, with their defaults.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Root, "root", ".", "repository root (out/, specs/)")
	fs.StringVar(&o.Specs, "specs", "", "comma-separated spec names from the registry, or spec files (*.yaml, rendered fresh), each for every target or NAME@sm80 / NAME@sm90 for one; default: every registered CUDA kernel")
	fs.IntVar(&o.Random, "random", 0, "also verify this many random configurations (gen.Random)")
	fs.Int64Var(&o.Seed, "seed", 1, "seed of -random and of the kernels' inputs")
	fs.StringVar(&o.NVCC, "nvcc", "nvcc", "nvcc to compile the kernels with")
	fs.BoolVar(&o.Time, "time", false, "time every kernel (CUDA events, L2 flushed before each run)")
	fs.StringVar(&o.JSON, "json", "", "write the report as JSON to this file")
	fs.StringVar(&o.Shard, "shard", "0/1", "verify only shard i/n of the items (item k is in shard k mod n)")
	fs.IntVar(&o.GPUs, "gpus", 0, "spread the items over this many GPUs: one child process per GPU (CUDA_VISIBLE_DEVICES=i, -shard i/N), reports merged")
	fs.IntVar(&o.Jobs, "jobs", runtime.NumCPU(), "parallel nvcc compiles")
	fs.StringVar(&o.Work, "work", "", "folder for cubins and rendered random configurations (default: a temporary folder, removed at the end)")
	fs.BoolVar(&o.Keep, "keep", false, "keep the temporary work folder")
	fs.DurationVar(&o.Timeout, "timeout", 15*time.Minute, "limit for one kernel's run (child process)")
	fs.Float64Var(&o.Tol, "tol", Tolerance, "relative L2 error that passes")
	fs.IntVar(&o.Samples, "samples", DefaultCompare.Samples, "outputs compared for shapes too big to compare whole")
	fs.IntVar(&o.FullMax, "full-max", DefaultCompare.FullMax, "compare every output when there are at most this many")
	fs.IntVar(&o.Runs, "runs", DefaultTiming.Runs, "timed runs with -time")
	fs.IntVar(&o.Warmup, "warmup", DefaultTiming.Warmup, "untimed warm-up runs with -time")
	fs.BoolVar(&o.CompileOnly, "compile-only", false, "compile (and report registers and spills) but run nothing: kernels are not_run")
	fs.StringVar(&o.Commit, "commit", "", "commit to report (default: the commit the binary was built from, else git rev-parse HEAD in -root)")
	fs.BoolVar(&o.Mutate, "mutate", false, "mutation check: after each kernel, its planted-bug mutants (gen/mutate), items <spec>~<mutation> that must come out incorrect; exit 1 if a mutant passes or fails")
}

// Check validates option values that flag parsing cannot.
func (o *Options) Check() error {
	if _, err := ParseShard(o.Shard); err != nil {
		return err
	}
	for _, s := range o.SpecList() {
		if _, _, err := splitTarget(s); err != nil {
			return err
		}
	}
	switch {
	case o.Random < 0:
		return fmt.Errorf("-random %d: must be >= 0", o.Random)
	case o.GPUs < 0:
		return fmt.Errorf("-gpus %d: must be >= 0", o.GPUs)
	case o.GPUs > 0 && o.Shard != "0/1":
		return fmt.Errorf("-gpus and -shard do not combine: -gpus shards by itself")
	case o.Runs < 1 || o.Warmup < 0:
		return fmt.Errorf("-runs must be >= 1 and -warmup >= 0")
	case o.Samples < 1 || o.FullMax < 0:
		return fmt.Errorf("-samples must be >= 1 and -full-max >= 0")
	case !(o.Tol > 0):
		return fmt.Errorf("-tol %g: must be > 0", o.Tol)
	}
	return nil
}

// Args is o as a command line (every flag explicit, -gpus left out), for a
// child that runs one shard.
func (o *Options) Args() []string {
	a := []string{
		"-root", o.Root,
		"-specs", o.Specs,
		"-random", strconv.Itoa(o.Random),
		"-seed", strconv.FormatInt(o.Seed, 10),
		"-nvcc", o.NVCC,
		"-time=" + strconv.FormatBool(o.Time),
		"-json", o.JSON,
		"-shard", o.Shard,
		"-jobs", strconv.Itoa(o.Jobs),
		"-work", o.Work,
		"-keep=" + strconv.FormatBool(o.Keep),
		"-timeout", o.Timeout.String(),
		"-tol", strconv.FormatFloat(o.Tol, 'g', -1, 64),
		"-samples", strconv.Itoa(o.Samples),
		"-full-max", strconv.Itoa(o.FullMax),
		"-runs", strconv.Itoa(o.Runs),
		"-warmup", strconv.Itoa(o.Warmup),
		"-compile-only=" + strconv.FormatBool(o.CompileOnly),
		"-commit", o.Commit,
		"-mutate=" + strconv.FormatBool(o.Mutate),
	}
	return a
}

// ShardOptions is the options of child i of n under -gpus: its shard, its
// own report and work folder, and its share of the compile jobs.
func (o Options) ShardOptions(i, n int, json, work string) Options {
	c := o
	c.GPUs = 0
	c.Shard = Shard{i, n}.String()
	c.JSON = json
	c.Work = work
	c.Jobs = max(1, o.Jobs/n)
	return c
}

// VisibleDevice is the CUDA_VISIBLE_DEVICES value of child i: entry i of
// the parent's own list when it has one, else i.
func VisibleDevice(parent string, i int) (string, error) {
	if strings.TrimSpace(parent) == "" {
		return strconv.Itoa(i), nil
	}
	list := strings.Split(parent, ",")
	if i >= len(list) {
		return "", fmt.Errorf("CUDA_VISIBLE_DEVICES=%s lists %d devices, -gpus needs %d", parent, len(list), i+1)
	}
	return strings.TrimSpace(list[i]), nil
}

// SpecList splits -specs.
func (o *Options) SpecList() []string {
	var out []string
	for _, s := range strings.Split(o.Specs, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
