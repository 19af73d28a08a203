package gpu

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// NewReport fills a report's header: the GPU (when this build can see
// one), the date, the commit (the given one, else git's) and the host.
func NewReport(o *Options, root, knownCommit string) *Report {
	r := &Report{
		Date:   time.Now().UTC().Format(time.RFC3339),
		Commit: commit(root, knownCommit),
		Seed:   o.Seed,
		Random: o.Random,
		Timed:  o.Time,
	}
	r.Host, _ = os.Hostname()
	if name, cc, driver, err := DeviceInfo(); err == nil {
		r.GPU, r.CC, r.Driver = name, cc, driver
	} else {
		r.GPU = "none (" + err.Error() + ")"
	}
	if s, err := ParseShard(o.Shard); err == nil && s.N > 1 {
		r.Shard = s.String()
	}
	return r
}

// commit is the known commit (-commit, or the one the binary was built
// from: its kernel registry is compiled in, so it names what runs), else
// `git rev-parse HEAD` in root. Git comes second because a tree copied to
// a GPU host may carry a stale .git.
func commit(root, known string) string {
	if known != "" {
		return known
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if c := strings.TrimSpace(string(out)); err == nil && c != "" {
		return c
	}
	return ""
}

// DriverString formats cuDriverGetVersion's number ("13.0").
func DriverString(v int) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// Counts tallies the dispositions.
func (r *Report) Counts() map[Disposition]int {
	c := map[Disposition]int{}
	for _, res := range r.Results {
		c[res.Disposition]++
	}
	return c
}

// Bad reports whether any item failed, was incorrect or had an invalid
// spec, or (-mutate) a mutant passed or failed: mutants should be incorrect.
func (r *Report) Bad() bool {
	for _, res := range r.Results {
		if res.Mutation == "" && res.Disposition.Bad() {
			return true
		}
	}
	return TallyMutations(r).Bad()
}

// WriteSummary prints the end-of-run table.
func WriteSummary(w io.Writer, r *Report) {
	fmt.Fprintf(w, "GPU %s (cc %s), driver %s, %s, commit %.12s, host %s\n",
		r.GPU, r.CC, DriverString(r.Driver), r.Date, r.Commit, r.Host)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tspec\ttarget\tresult\tran\trel_l2\tcompared\tregs\tspills\tmedian ms\tmean ms\tGFLOP/s\tfloor\treason")
	for _, res := range r.Results {
		ran, rel, cmp, regs, spills, med, mean, gf, floor := "-", "-", "-", "-", "-", "-", "-", "-", "-"
		if res.Loaded != "" {
			ran = res.Loaded
		}
		if res.RelL2 != nil {
			rel = fmt.Sprintf("%.2g", float64(*res.RelL2))
		}
		if res.Compared != nil {
			cmp = fmt.Sprintf("%s %d", res.Compared.Mode, res.Compared.Count)
		}
		if len(res.Arch) > 0 {
			var rs, ss []string
			for _, a := range sortedArchs(res.Arch) {
				rs = append(rs, fmt.Sprint(res.Arch[a].Registers))
				ss = append(ss, fmt.Sprint(res.Arch[a].SpillBytes))
			}
			regs, spills = strings.Join(rs, "/"), strings.Join(ss, "/")
		}
		if res.Time != nil {
			med, mean = fmt.Sprintf("%.4f", res.Time.MedianMS), fmt.Sprintf("%.4f", res.Time.MeanMS)
			gf, floor = fmt.Sprintf("%.0f", res.GFLOPS), fmt.Sprintf("%.1f%%", 100*res.FloorFrac)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", res.Index, res.Spec, res.Target, res.Disposition,
			ran, rel, cmp, regs, spills, med, mean, gf, floor, tail(res.Reason, 80))
	}
	tw.Flush()
	c := r.Counts()
	var parts []string
	for _, d := range []Disposition{Passed, Incorrect, Failed, NotRun, NotSupported, InvalidSpec} {
		if c[d] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", c[d], d))
		}
	}
	fmt.Fprintf(w, "%d items: %s\n", len(r.Results), strings.Join(parts, ", "))
	if t := TallyMutations(r); t.Planted > 0 {
		fmt.Fprintln(w, t)
	}
}

func sortedArchs(m map[string]ArchInfo) []string {
	var out []string
	for a := range m {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}
