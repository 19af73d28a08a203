package main

import (
	"errors"
	"flag"
	"fmt"

	"convtgen/gen/importer"
	"convtgen/gen/safeio"
)

// maxProblemFile bounds a problem file read: KernelBench's are a few KiB.
const maxProblemFile = 1 << 20

var cmdImport = &command{
	name:    "import",
	args:    "PROBLEM.py",
	purpose: "write a spec from a KernelBench-style problem file",
	about: `Reads the file's Model (__init__'s signature and defaults, the
nn.ConvTranspose3d call, forward), its constants, get_inputs() and
get_init_inputs(), without running it, and writes the spec's top level,
problem and reference sections: no kernel section, the plan chooses. What the
spec cannot express (layers or ops besides the convolution, values other than
integers, booleans and 3-tuples) is refused as file:line:col: reason.`,
	examples: []string{
		"convtgen import 61_conv_transposed_3D__square_input__square_kernel.py",
		"convtgen import -name l1_61_square -o specs/level1/61.yaml problem.py",
	},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		name := fs.String("name", "", "the spec's `NAME` (default: from the file name, lower case)")
		out := fs.String("o", "", "write the spec to `FILE` instead of standard output")
		return func(e *env, args []string) error {
			if len(args) != 1 {
				return usagef("takes one problem file (got %d arguments)", len(args))
			}
			src, err := safeio.ReadRegular(e.abs(args[0]), maxProblemFile)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			n := *name
			if n == "" {
				n = importer.DefaultName(args[0])
			}
			spec, err := importer.Import(args[0], src, n)
			var refused importer.Errors
			if errors.As(err, &refused) {
				for _, r := range refused {
					fmt.Fprintln(e.stderr, r.Error())
				}
				fmt.Fprintf(e.stderr, "convtgen: %s in %s; nothing written\n", plural(len(refused), "problem"), args[0])
				return errReported
			}
			if err != nil {
				return err
			}
			if *out == "" {
				_, err := e.stdout.Write(spec)
				return err
			}
			return safeio.WriteWhole(e.abs(*out), spec)
		}
	},
}
