// Command report renders out/REPORT.md, out/report.json and the plot from
// the JSON results the GPU check wrote (make gpu-check, then make report).
package main

import (
	"flag"
	"fmt"
	"os"

	"convtgen/verify/report"
)

func main() {
	root := flag.String("root", ".", "repository root (for the specs)")
	in := flag.String("in", "out/gpu", "folder with the GPU check's JSON results")
	out := flag.String("out", "out", "folder to write REPORT.md, report.json and the plot into")
	flag.Parse()
	r, err := report.Build(*root, *in)
	if err == nil {
		err = report.Write(r, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
	fmt.Printf("report: %d rows, %d level-2 rows, %d sweeps, written to %s\n", len(r.Rows), len(r.Level2.Rows), len(r.Sweeps), *out)
}
