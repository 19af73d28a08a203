package emulate

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"convtgen/gen/plan"
)

// tritonEmu runs an emitted Triton submission's kernel on the CPU under
// stand-ins for torch and triton (see its docstring).
//
//go:embed triton_emu.py
var tritonEmu string

// RunTriton executes the Triton submission src with python: its wrapper
// (re-layouts and launch) on x, w and b (nil without bias) in PyTorch's
// layouts, then its kernel, its programs in the order of seed (0: in
// order; SeedFor(src) gives a configuration's own); it returns the output
// of outLen elements. A load or store outside its tensor is an error, and
// so is an element of the output or a re-laid copy written other than
// once, or a store to an input.
func RunTriton(ctx context.Context, python string, src []byte, seed uint64, x, w, b []float32, outLen int) ([]float32, error) {
	y, _, err := runTriton(ctx, python, src, seed, x, w, b, nil, nil, nil, outLen)
	return y, err
}

// RunTritonChain executes the whole forward of a Triton submission with
// ops around the convolution (its forward function, plan chain ch): x is
// the forward's input (of shape xShape: before a prologue), extras the
// values of ch.Extras in order (an int64 extra's as floats). It returns
// the output (finalLen elements) and the extras after the forward (a
// BatchNorm's running statistics). Beside RunTriton's checks, each launch
// stores an element at most once, and the tensors between the kernels are
// written whole.
func RunTritonChain(ctx context.Context, python string, src []byte, seed uint64, x, w, b []float32, xShape []int, ch *plan.Chain, extras [][]float32) ([]float32, [][]float32, error) {
	if len(extras) != len(ch.Extras) {
		return nil, nil, fmt.Errorf("emulate: %d extras, the chain has %d", len(extras), len(ch.Extras))
	}
	return runTriton(ctx, python, src, seed, x, w, b, xShape, ch, extras, finalLen(ch))
}

// chainManifest tells triton_emu.py the forward's input shape and where
// the extras are.
type chainManifest struct {
	XShape []int        `json:"x_shape"`
	Extras []extraEntry `json:"extras"`
}

type extraEntry struct {
	File  string `json:"file"`
	DType string `json:"dtype"`
	Expr  string `json:"expr"`
}

func runTriton(ctx context.Context, python string, src []byte, seed uint64, x, w, b []float32, xShape []int, ch *plan.Chain, extras [][]float32, outLen int) ([]float32, [][]float32, error) {
	dir, err := os.MkdirTemp("", "emulate-triton-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	files := map[string][]byte{"emu.py": []byte(tritonEmu), "submission.py": src}
	if ch != nil {
		m := chainManifest{XShape: xShape, Extras: []extraEntry{}}
		for i, e := range ch.Extras {
			entry := extraEntry{File: "e" + strconv.Itoa(i), DType: "float32", Expr: e.Expr}
			if e.Int64() {
				entry.DType = "int64"
			}
			m.Extras = append(m.Extras, entry)
			if err := writeExtra(filepath.Join(dir, entry.File), extras[i], e.Int64()); err != nil {
				return nil, nil, err
			}
		}
		if files["chain.json"], err = json.Marshal(m); err != nil {
			return nil, nil, err
		}
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, nil, err
		}
	}
	for name, v := range map[string][]float32{"x.bin": x, "w.bin": w, "b.bin": b} {
		if v == nil {
			continue
		}
		if err := writeFloats(filepath.Join(dir, name), v); err != nil {
			return nil, nil, err
		}
	}
	cmd := exec.CommandContext(ctx, python, filepath.Join(dir, "emu.py"), filepath.Join(dir, "submission.py"), dir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", fmt.Sprintf("%s=%d", SeedEnv, seed))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("emulate triton (seed %d: %s=%d reproduces): %v\n%s", seed, SeedEnv, seed, err, out)
	}
	y, err := readFloats(filepath.Join(dir, "y.bin"), outLen)
	if err != nil || ch == nil {
		return y, nil, err
	}
	after := make([][]float32, len(ch.Extras))
	for i, e := range ch.Extras {
		if after[i], err = readExtra(filepath.Join(dir, "e"+strconv.Itoa(i)+".after"), e.Len, e.Int64()); err != nil {
			return nil, nil, err
		}
	}
	return y, after, nil
}
