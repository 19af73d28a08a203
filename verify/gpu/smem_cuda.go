//go:build cuda

package gpu

// #cgo LDFLAGS: -lcuda
// #include <cuda.h>
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// allowDynamicSmem opts fn in to bytes of dynamic shared memory (past the
// 48 KiB every kernel gets), as the emitted host wrapper does with
// cudaFuncSetAttribute. gorgonia.org/cu has no call for it; its Function
// is the driver's CUfunction and nothing else.
func allowDynamicSmem(fn cu.Function, bytes int) error {
	f := *(*C.CUfunction)(unsafe.Pointer(&fn))
	if r := C.cuFuncSetAttribute(f, C.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, C.int(bytes)); r != C.CUDA_SUCCESS {
		return fmt.Errorf("allowing %d bytes of dynamic shared memory: CUresult %d", bytes, int(r))
	}
	return nil
}
