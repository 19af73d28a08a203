package verify

// The compile tier: the kernel source cut out of an emitted CUDA file
// (cuda.<target>.py), built alone with nvcc -cubin, and ptxas's resource
// report parsed.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// KernelSource returns the content of an emitted CUDA submission's
// KERNEL_SOURCE raw string: the kernel alone, which compiles without torch.
func KernelSource(src []byte) (string, error) {
	s, err := scanPython(src).named("KERNEL_SOURCE")
	if err != nil {
		return "", err
	}
	if s.end >= len(src) {
		return "", errors.New("KERNEL_SOURCE is not terminated")
	}
	return string(src[s.start:s.end]), nil
}

// HostSource returns the HOST_SOURCE raw string of an emitted CUDA
// submission: the host wrapper that launches the kernels.
func HostSource(src []byte) (string, error) {
	s, err := scanPython(src).named("HOST_SOURCE")
	if err != nil {
		return "", err
	}
	if s.end >= len(src) {
		return "", errors.New("HOST_SOURCE is not terminated")
	}
	return string(src[s.start:s.end]), nil
}

// PtxasInfo is what ptxas -v reports for one function compiled for one
// architecture.
type PtxasInfo struct {
	Function        string
	Arch            string      // "sm_80"; empty for a device function reported before any entry
	Entry           bool        // a kernel (ptxas compiled it as an entry function)
	Registers       int         // per thread
	Barriers        int         // named barriers used (CUDA 12.x+ reports it)
	StackFrame      int         // bytes
	SpillStores     int         // bytes
	SpillLoads      int         // bytes
	CumulativeStack int         // bytes, when ptxas reports it
	Smem            int         // static shared memory, bytes
	Cmem            map[int]int // constant bank -> bytes, from the function's "Used" line
	ModuleGmem      int         // the module's global memory, bytes ("N bytes gmem")
	ModuleCmem      map[int]int // the module's constant banks (__constant__ data), bytes
	// WGMMASerialized: why ptxas runs the function's wgmma instructions
	// one at a time (its "Potential Performance Loss" note), else empty.
	WGMMASerialized string
}

// Spills reports local-memory spilling.
func (p PtxasInfo) Spills() bool { return p.SpillStores > 0 || p.SpillLoads > 0 }

func (p PtxasInfo) String() string {
	return fmt.Sprintf("%s %s: %d registers, %d B smem, %d B stack, spills %d/%d B (stores/loads)",
		p.Function, p.Arch, p.Registers, p.Smem, p.StackFrame, p.SpillStores, p.SpillLoads)
}

var (
	ptxasEntryRe  = regexp.MustCompile(`ptxas info\s*:\s*Compiling entry function '([^']+)' for '([^']+)'`)
	ptxasPropsRe  = regexp.MustCompile(`ptxas info\s*:\s*Function properties for (\S+)`)
	ptxasStackRe  = regexp.MustCompile(`^\s*(?:\d+>\s*)?(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasUsedRe   = regexp.MustCompile(`ptxas info\s*:\s*Used (\d+) registers(.*)$`)
	ptxasGmemRe   = regexp.MustCompile(`ptxas info\s*:\s*(\d+) bytes gmem(.*)$`)
	ptxasSpillRe  = regexp.MustCompile(`ptxas warning\s*:\s*Registers are spilled to local memory in function '([^']+)', (\d+) bytes spill stores, (\d+) bytes spill loads`)
	ptxasCmemRe   = regexp.MustCompile(`(\d+) bytes cmem\[(\d+)\]`)
	ptxasSmemRe   = regexp.MustCompile(`(\d+) bytes smem`)
	ptxasBarRe    = regexp.MustCompile(`used (\d+) barriers`)
	ptxasCumulRe  = regexp.MustCompile(`(\d+) bytes cumulative stack size`)
	ptxasFailedRe = regexp.MustCompile(`ptxas (?:fatal|error)\s*:`)
	ptxasSerialRe = regexp.MustCompile(`wgmma\.mma_async instructions are serialized due to (.+) in the function '([^']+)'`)
)

// ParsePtxas reads the resource report of nvcc -Xptxas -v (CUDA 11.x to
// 13.x formats): one PtxasInfo per function and architecture, in the order
// ptxas reports them.
func ParsePtxas(output string) ([]PtxasInfo, error) {
	var infos []*PtxasInfo
	index := map[string]*PtxasInfo{}
	get := func(name, arch string) *PtxasInfo {
		key := name + "\x00" + arch
		if p := index[key]; p != nil {
			return p
		}
		p := &PtxasInfo{Function: name, Arch: arch}
		index[key] = p
		infos = append(infos, p)
		return p
	}
	var (
		arch       string      // of the entry being compiled
		entry      *PtxasInfo  // what a "Used" line describes
		props      *PtxasInfo  // what a stack-frame line describes
		moduleGmem int         // the latest module-level line, for the entries after it
		moduleCmem map[int]int // "
	)
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), "\r")
		switch {
		case ptxasFailedRe.MatchString(line):
			return nil, fmt.Errorf("ptxas output line %d: %s", n, strings.TrimSpace(line))
		case ptxasEntryRe.MatchString(line):
			m := ptxasEntryRe.FindStringSubmatch(line)
			arch = m[2]
			entry = get(m[1], arch)
			entry.Entry = true
			entry.ModuleGmem, entry.ModuleCmem = moduleGmem, moduleCmem
			props = nil
		case ptxasPropsRe.MatchString(line):
			name := ptxasPropsRe.FindStringSubmatch(line)[1]
			if entry != nil && entry.Function == name {
				props = entry
			} else {
				props = get(name, arch) // a device function
			}
		case ptxasStackRe.MatchString(line):
			if props == nil {
				return nil, fmt.Errorf("ptxas output line %d: stack frame line with no function: %q", n, line)
			}
			m := ptxasStackRe.FindStringSubmatch(line)
			props.StackFrame, props.SpillStores, props.SpillLoads = atoi(m[1]), atoi(m[2]), atoi(m[3])
			props = nil
		case ptxasUsedRe.MatchString(line):
			if entry == nil {
				return nil, fmt.Errorf("ptxas output line %d: register line with no entry function: %q", n, line)
			}
			m := ptxasUsedRe.FindStringSubmatch(line)
			entry.Registers = atoi(m[1])
			rest := m[2]
			if s := ptxasSmemRe.FindStringSubmatch(rest); s != nil {
				entry.Smem = atoi(s[1])
			}
			if s := ptxasBarRe.FindStringSubmatch(rest); s != nil {
				entry.Barriers = atoi(s[1])
			}
			if s := ptxasCumulRe.FindStringSubmatch(rest); s != nil {
				entry.CumulativeStack = atoi(s[1])
			}
			entry.Cmem = cmem(rest)
		case ptxasGmemRe.MatchString(line):
			m := ptxasGmemRe.FindStringSubmatch(line)
			moduleGmem, moduleCmem = atoi(m[1]), cmem(m[2])
		case ptxasSerialRe.MatchString(line):
			m := ptxasSerialRe.FindStringSubmatch(line)
			get(m[2], arch).WGMMASerialized = m[1]
		case ptxasSpillRe.MatchString(line):
			m := ptxasSpillRe.FindStringSubmatch(line)
			p := get(m[1], arch)
			p.SpillStores, p.SpillLoads = max(p.SpillStores, atoi(m[2])), max(p.SpillLoads, atoi(m[3]))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, errors.New("no ptxas resource report in the output (was -Xptxas -v given?)")
	}
	out := make([]PtxasInfo, len(infos))
	for i, p := range infos {
		out[i] = *p
	}
	return out, nil
}

func cmem(s string) map[int]int {
	var m map[int]int
	for _, c := range ptxasCmemRe.FindAllStringSubmatch(s, -1) {
		if m == nil {
			m = map[int]int{}
		}
		m[atoi(c[2])] = atoi(c[1])
	}
	return m
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the patterns only match digits
	return n
}

// CompileKernel compiles CUDA source alone for arch (sm_80, sm_90 ...):
// nvcc -cubin -arch=<arch> -O3 -Xptxas -v -o outPath. An empty outPath
// keeps the cubin in a temporary directory only. It returns ptxas's report
// per function and nvcc's whole output; the error is set when nvcc fails,
// when the report cannot be read, when any function spills registers, or
// when ptxas serializes its wgmma products.
func CompileKernel(ctx context.Context, nvcc, source, arch, outPath string) (info []PtxasInfo, log string, err error) {
	dir, err := os.MkdirTemp("", "convtgen-nvcc-")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	cu := filepath.Join(dir, "kernel.cu")
	if err := os.WriteFile(cu, []byte(source), 0o644); err != nil {
		return nil, "", err
	}
	if outPath == "" {
		outPath = filepath.Join(dir, "kernel.cubin")
	}
	cmd := exec.CommandContext(ctx, nvcc, "-cubin", "-arch="+arch, "-O3", "-Xptxas", "-v", "-o", outPath, cu)
	cmd.Dir = dir
	out, runErr := cmd.CombinedOutput()
	log = string(out)
	if runErr != nil {
		return nil, log, fmt.Errorf("nvcc -arch=%s: %w\n%s", arch, runErr, tail(log, 4000))
	}
	info, err = ParsePtxas(log)
	if err != nil {
		return nil, log, fmt.Errorf("nvcc -arch=%s: %w", arch, err)
	}
	var spills, serial []string
	for _, p := range info {
		if p.Spills() {
			spills = append(spills, p.String())
		}
		if p.WGMMASerialized != "" {
			serial = append(serial, p.Function+": "+p.WGMMASerialized)
		}
	}
	if len(spills) > 0 {
		return info, log, fmt.Errorf("nvcc -arch=%s: registers spill to local memory: %s", arch, strings.Join(spills, "; "))
	}
	// A wgmma kernel whose products ptxas serializes runs, correctly, at a
	// fraction of its rate: a defect of the emitted code, not a tuning.
	if len(serial) > 0 {
		return info, log, fmt.Errorf("nvcc -arch=%s: ptxas serializes the wgmma products: %s", arch, strings.Join(serial, "; "))
	}
	return info, log, nil
}

// CompilePTX compiles CUDA source alone to PTX for a virtual architecture
// (compute_80): nvcc -ptx -arch=<arch> -O3 -o outPath. That is the PTX an
// sm80 file embeds beside its cubin, which a later GPU's driver compiles
// as it loads it.
func CompilePTX(ctx context.Context, nvcc, source, arch, outPath string) error {
	dir, err := os.MkdirTemp("", "convtgen-nvcc-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cu := filepath.Join(dir, "kernel.cu")
	if err := os.WriteFile(cu, []byte(source), 0o644); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, nvcc, "-ptx", "-arch="+arch, "-O3", "-o", outPath, cu)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nvcc -ptx -arch=%s: %w\n%s", arch, err, tail(string(out), 4000))
	}
	return nil
}

// NVCCKnows reports whether nvcc can build for arch (sm_90a and its
// wgmma need CUDA 12.0 or later): tests skip, with the reason, what the
// installed nvcc cannot build.
func NVCCKnows(nvcc, arch string) bool {
	flag := "--list-gpu-code"
	if strings.HasPrefix(arch, "compute_") {
		flag = "--list-gpu-arch"
	}
	out, err := exec.Command(nvcc, flag).Output()
	return err == nil && slices.Contains(strings.Fields(string(out)), arch)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
