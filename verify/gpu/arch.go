package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseArch reads "sm_90" (or "sm_90a", "sm_100") as compute capability
// major and minor.
func ParseArch(arch string) (major, minor int, err error) {
	s := strings.TrimRight(strings.TrimPrefix(arch, "sm_"), "abcdefghijklmnopqrstuvwxyz")
	n, err := strconv.Atoi(s)
	if err != nil || !strings.HasPrefix(arch, "sm_") || n < 10 {
		return 0, 0, fmt.Errorf("architecture %q: want sm_XY", arch)
	}
	return n / 10, n % 10, nil
}

// archMismatch says why a cubin for arch cannot run on a device of
// compute capability cc ("9.0"), or "" when it can: a cubin runs only on
// its own major version at an equal or higher minor.
func archMismatch(arch, cc string) string {
	am, an, err := ParseArch(arch)
	if err != nil {
		return ""
	}
	var dm, dn int
	if _, err := fmt.Sscanf(cc, "%d.%d", &dm, &dn); err != nil {
		return ""
	}
	if am != dm || an > dn {
		return fmt.Sprintf("a %s cubin does not run on compute capability %s", arch, cc)
	}
	return ""
}
