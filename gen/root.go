package gen

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Module is the Go module the repository's go.mod declares: it is how
// FindRoot tells the repository from any other Go module above it.
const Module = "convtgen"

// FindRoot returns the repository root for dir: dir itself or the nearest
// folder above it holding a go.mod that declares module convtgen. So the
// command works from any folder inside the repository.
func FindRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := abs; ; {
		if declaresModule(filepath.Join(d, "go.mod")) {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", fmt.Errorf("%s: not inside the convtgen repository (no go.mod declaring module %s here or above)", abs, Module)
		}
		d = up
	}
}

// declaresModule reports whether the file is a go.mod whose module line
// names Module.
func declaresModule(path string) bool {
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`) == Module
		}
	}
	return false
}
