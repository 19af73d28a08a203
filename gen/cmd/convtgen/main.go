// Command convtgen renders every spec under specs/ into out/ (and the
// verifier's kernel registry). With -check it only reports stale files.
// With -random N it instead renders N random valid configurations into
// -out, for sweeps on a GPU host.
package main

import (
	"flag"
	"fmt"
	"os"

	"convtgen/gen"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "report out-of-date files and exit 1 if any; write nothing")
	random := flag.Int("random", 0, "render this many random valid configurations instead of the specs")
	seed := flag.Int64("seed", 1, "seed for -random")
	outDir := flag.String("out", "build/random", "folder for -random")
	flag.Parse()

	if *random > 0 {
		n, err := gen.WriteRandom(*outDir, *random, *seed)
		exitOn(err)
		fmt.Printf("convtgen: %d random configurations in %s\n", n, *outDir)
		return
	}
	changes, err := gen.Generate(*root, *check)
	exitOn(err)
	for _, c := range changes {
		fmt.Println(c)
	}
	if *check && len(changes) > 0 {
		fmt.Fprintln(os.Stderr, "convtgen: generated files are out of date; run go generate ./...")
		os.Exit(1)
	}
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
