package gpu

import (
	"context"
	"os"
	"path/filepath"

	"convtgen/verify"
)

// compileKernel is Runner.Compile's real hook: verify.CompileKernel (nvcc
// -cubin, ptxas report, an error on spills) into out, reduced to the
// numbers the report keeps, or for a compute_XY arch verify.CompilePTX
// (no report). The numbers come back with a spill error too.
func compileKernel(ctx context.Context, nvcc, source, arch, out string, k verify.Kernel) (ArchInfo, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return ArchInfo{}, err
	}
	if IsPTX(arch) {
		return ArchInfo{}, verify.CompilePTX(ctx, nvcc, source, arch, out)
	}
	infos, _, err := verify.CompileKernel(ctx, nvcc, source, arch, out)
	return ArchInfoOf(infos, arch, k), err
}

// ArchInfoOf picks the kernel's and its repack's entries out of ptxas's
// report for one architecture. Shared memory is the static that ptxas
// reports plus the launch's dynamic.
func ArchInfoOf(infos []verify.PtxasInfo, arch string, k verify.Kernel) ArchInfo {
	var a ArchInfo
	for _, p := range infos {
		if p.Arch != "" && p.Arch != arch {
			continue
		}
		switch p.Function {
		case k.Function:
			a.Registers, a.SmemBytes = p.Registers, p.Smem+k.DynamicSmem
			a.SpillBytes += p.SpillStores + p.SpillLoads
		case k.Repack:
			a.RepackRegisters = p.Registers
			a.SpillBytes += p.SpillStores + p.SpillLoads
		}
	}
	return a
}
