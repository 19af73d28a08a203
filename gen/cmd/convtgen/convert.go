package main

import (
	"flag"
	"fmt"

	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

var cmdConvert = &command{
	name:    "convert",
	args:    "SPEC.yaml ...",
	purpose: "rewrite version-1 spec files in the version-2 form, in place",
	about: `Rewrites each file's kernel section in the nested version-2 form (the
CUDA precision and flat tile become kernel.cuda.<family>, a Triton precision
that came from the CUDA one is written into kernel.triton) and sets version 2,
keeping every comment. Each file is replaced whole or not at all; a file that
is already version 2 is left as it is.`,
	examples: []string{
		"convtgen convert specs/level1/77_padded_dilated_strided.yaml",
		"convtgen convert old/*.yaml",
	},
	define: func(fs *flag.FlagSet) func(*env, []string) error {
		return func(e *env, args []string) error {
			if len(args) == 0 {
				return usagef("takes one spec file or more")
			}
			for _, path := range args {
				data, err := safeio.ReadRegular(e.abs(path), safeio.MaxSpecSize)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if _, err := spec.Parse(path, data); err == nil {
					continue // already the current version, and valid
				}
				converted, err := spec.ConvertV1(data)
				if err != nil {
					return fmt.Errorf("%s: %w", path, err)
				}
				if _, err := spec.Parse(path, converted); err != nil {
					return fmt.Errorf("%s: converted, but the result is not a valid spec: %w", path, err)
				}
				if err := safeio.WriteWhole(e.abs(path), converted); err != nil {
					return err
				}
				fmt.Fprintf(e.stdout, "converted  %s\n", path)
			}
			return nil
		}
	},
}
