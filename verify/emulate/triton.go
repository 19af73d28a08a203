package emulate

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
	dir, err := os.MkdirTemp("", "emulate-triton-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	files := map[string][]byte{"emu.py": []byte(tritonEmu), "submission.py": src}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	for name, v := range map[string][]float32{"x.bin": x, "w.bin": w, "b.bin": b} {
		if v == nil {
			continue
		}
		if err := writeFloats(filepath.Join(dir, name), v); err != nil {
			return nil, err
		}
	}
	cmd := exec.CommandContext(ctx, python, filepath.Join(dir, "emu.py"), filepath.Join(dir, "submission.py"), dir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", fmt.Sprintf("%s=%d", SeedEnv, seed))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("emulate triton (seed %d: %s=%d reproduces): %v\n%s", seed, SeedEnv, seed, err, out)
	}
	return readFloats(filepath.Join(dir, "y.bin"), outLen)
}
