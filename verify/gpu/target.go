package gpu

// What nvcc builds for an item's target, and which of it a GPU loads. Each
// item is compiled for its own target only: an sm80 file as an sm_80 cubin
// (ptxas's report) and as compute_80 PTX, an sm90 file as an sm_90a cubin,
// the code its load_inline gencode embeds.

import (
	"fmt"
	"strconv"
	"strings"

	"convtgen/gen/plan"
)

// Builds are nvcc's outputs for a file of target t, as -arch values: the
// target's cubin, then, for a target whose file also embeds PTX (sm80:
// code=[sm_80,compute_80]), that PTX, which a later GPU JIT-compiles
// through the driver: how an sm80 file runs on an H200.
func Builds(t plan.Target) []string {
	b := []string{t.Arch}
	if !t.Exact() {
		b = append(b, fmt.Sprintf("compute_%d%d", t.Major, t.Minor))
	}
	return b
}

// IsPTX reports whether a build (an -arch value) is PTX, not a cubin.
func IsPTX(arch string) bool { return strings.HasPrefix(arch, "compute_") }

// ParseArch reads "sm_90" (or "sm_90a", "sm_100", "compute_80") as compute
// capability major and minor.
func ParseArch(arch string) (major, minor int, err error) {
	rest, ok := strings.CutPrefix(arch, "sm_")
	if !ok {
		rest, ok = strings.CutPrefix(arch, "compute_")
	}
	n, err := strconv.Atoi(strings.TrimRight(rest, "abcdefghijklmnopqrstuvwxyz"))
	if err != nil || !ok || n < 10 {
		return 0, 0, fmt.Errorf("architecture %q: want sm_XY or compute_XY", arch)
	}
	return n / 10, n % 10, nil
}

// parseCC reads a compute capability ("9.0").
func parseCC(cc string) (major, minor int, err error) {
	if _, err := fmt.Sscanf(cc, "%d.%d", &major, &minor); err != nil {
		return 0, 0, fmt.Errorf("compute capability %q: want X.Y", cc)
	}
	return major, minor, nil
}

// runs reports whether a build runs on compute capability cc: a cubin on
// its own major version at an equal or higher minor (an arch-specific
// "sm_90a" cubin on exactly its own), PTX on its version and every later.
func runs(arch string, major, minor int) bool {
	am, an, err := ParseArch(arch)
	if err != nil {
		return false
	}
	switch {
	case IsPTX(arch):
		return major > am || major == am && minor >= an
	case strings.HasSuffix(arch, "a"):
		return major == am && minor == an
	}
	return major == am && minor >= an
}

// Load picks which of t's builds a device of compute capability cc loads:
// the cubin where it runs, else the PTX where t has one that runs there.
// With none, arch is "" and why says so: the file's target is not this
// GPU, which is a skip, not a failure.
func Load(t plan.Target, cc string) (arch, why string) {
	major, minor, err := parseCC(cc)
	if err != nil {
		return "", err.Error()
	}
	for _, b := range Builds(t) {
		if runs(b, major, minor) {
			return b, ""
		}
	}
	need := "at least " + t.CC()
	if t.Exact() {
		need = "exactly " + t.CC()
	}
	return "", fmt.Sprintf("not this GPU: a %s file (%s, for the %s) needs compute capability %s, the device has %s",
		t.Name, strings.Join(Builds(t), " + "), t.GPU, need, cc)
}

// LoadedAs describes a build as it ran, for reports: an sm_80 cubin, or
// compute_80 PTX that the driver compiled for the device.
func LoadedAs(arch string) string {
	if IsPTX(arch) {
		return arch + " PTX (JIT)"
	}
	return arch + " cubin"
}
