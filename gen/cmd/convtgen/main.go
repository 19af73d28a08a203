// Command convtgen renders every spec under specs/ into out/ (and the
// verifier's kernel registry). With -check it only reports stale files.
// With -random N it instead renders N random valid configurations into
// -out, for sweeps on a GPU host. With -tune DIR it renders every spec's
// tuning candidates into DIR; -apply-tune RESULTS.json writes the fastest
// correct candidate of each spec (timed by the harness) back into its spec.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"convtgen/gen"
)

func main() {
	root := flag.String("root", ".", "repository root")
	check := flag.Bool("check", false, "report out-of-date files and exit 1 if any; write nothing")
	random := flag.Int("random", 0, "render this many random valid configurations instead of the specs")
	seed := flag.Int64("seed", 1, "seed for -random")
	outDir := flag.String("out", "build/random", "folder for -random or -specs")
	specDir := flag.String("specs", "", "render the specs of this folder (test data outside specs/) into -out instead")
	tuneDir := flag.String("tune", "", "render every spec's tuning candidates into this folder")
	only := flag.String("only", "", "with -tune: only these candidates (labels such as x15,t3, comma-separated) beside the specs' own choices")
	applyTune := flag.String("apply-tune", "", "harness JSON results (the run over out/ and the tuning run, comma-separated) to write back into the specs")
	manifest := flag.String("manifest", "build/tune/"+gen.ManifestFile, "candidate list of the tuning run, for -apply-tune")
	flag.Parse()

	switch {
	case *tuneDir != "":
		var labels []string
		if *only != "" {
			labels = strings.Split(*only, ",")
		}
		n, err := gen.WriteTune(*root, *tuneDir, labels...)
		exitOn(err)
		fmt.Printf("convtgen: %d tuning candidates in %s\n", n, *tuneDir)
		return
	case *applyTune != "":
		exitOn(applyTuning(*root, *applyTune, *manifest))
		return
	}

	if *specDir != "" {
		n, err := gen.WriteSpecDir(*specDir, *outDir)
		exitOn(err)
		fmt.Printf("convtgen: %d specs of %s in %s\n", n, *specDir, *outDir)
		return
	}
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

// applyTuning reads the tuning manifest and the harness results (the run
// over out/ and the tuning run, comma-separated), writes each spec's
// winner into it and regenerates.
func applyTuning(root, resultPaths, manifestPath string) error {
	cands, err := gen.ReadManifest(manifestPath)
	if err != nil {
		return err
	}
	var runs []gen.HarnessResults
	for _, path := range strings.Split(resultPaths, ",") {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A tuning run may time one backend only (TUNE=cuda or triton).
			fmt.Fprintf(os.Stderr, "convtgen: %s: not there, skipped\n", path)
			continue
		}
		if err != nil {
			return err
		}
		var res gen.HarnessResults
		if err := json.Unmarshal(data, &res); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, res)
	}
	if len(runs) == 0 {
		return fmt.Errorf("no results among %s", resultPaths)
	}
	// A spec whose current choice stays is left as it is: its note
	// still tells the tuning that chose it.
	var winners []gen.Winner
	for _, w := range gen.PickWinners(cands, runs...) {
		verdict := "new"
		if w.Current {
			verdict = "kept"
		} else {
			winners = append(winners, w)
		}
		fmt.Printf("%-44s %-6s %-4s %s  %.3f ms (of %d)\n", w.Spec, w.Backend, verdict, w.Choice(), w.MeanMS, w.Tried)
	}
	date := runs[0].Date
	if len(date) >= 10 {
		date = date[:10]
	}
	if err := gen.ApplyTune(root, winners, runs[0].GPU, date); err != nil {
		return err
	}
	_, err = gen.Generate(root, false)
	return err
}

func exitOn(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
