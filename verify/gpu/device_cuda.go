//go:build cuda

package gpu

// The only code that touches the GPU. gorgonia.org/cu calls cuInit in its
// package init and exits the process when there is no driver or device, so
// this file (and every import of cu) stays behind the "cuda" build tag.

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"unsafe"

	"convtgen/gen/geom"
	"convtgen/gen/plan"

	"gorgonia.org/cu"
)

// Enabled reports whether this build can run kernels (build tag "cuda").
const Enabled = true

// wtPoison fills the repacked-weight buffer before the repack kernel runs:
// a weight element the repack misses turns the outputs it feeds into NaN.
const wtPoison uint32 = 0x7FC0BEEF

// DeviceInfo names device 0 of the current CUDA_VISIBLE_DEVICES.
func DeviceInfo() (name, cc string, driver int, err error) {
	dev, err := cu.GetDevice(0)
	if err != nil {
		return "", "", 0, fmt.Errorf("device 0: %w", err)
	}
	if name, err = dev.Name(); err != nil {
		return "", "", 0, err
	}
	major, err1 := dev.Attribute(cu.ComputeCapabilityMajor)
	minor, err2 := dev.Attribute(cu.ComputeCapabilityMinor)
	if err := errors.Join(err1, err2); err != nil {
		return "", "", 0, err
	}
	return name, fmt.Sprintf("%d.%d", major, minor), cu.Version(), nil
}

// Execute runs one job on device 0, from the build of the kernel's target
// that the device runs (Load; none: not_supported): inputs drawn on the host, the output
// poisoned, weight repack and main kernel launched with the plan's grid,
// the output copied back and compared with the float64 reference; with
// timing, the forward is then timed with events. It must run on the
// goroutine that called it from main (the context is bound to its thread).
func Execute(j *Job) (out RunOutput) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer func() {
		if p := recover(); p != nil {
			out.Error = fmt.Sprintf("panic: %v", p)
		}
	}()
	c := j.Kernel.Conv
	out.Outputs = c.OutputLen()
	var err error
	if out.Device, out.CC, out.Driver, err = DeviceInfo(); err != nil {
		out.Error = err.Error()
		return out
	}
	target, err := plan.TargetNamed(j.Kernel.Target)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	arch, why := Load(target, out.CC)
	if arch == "" {
		out.NotSupported = why
		return out
	}
	module := j.Builds[arch]
	if module == "" {
		out.Error = fmt.Sprintf("the job has no %s build", arch)
		return out
	}
	out.Loaded = arch
	in := MakeInputs(c, j.InputDist, j.Seed)
	if j.Store != nil {
		in.Extras = MakeExtras(j.Kernel.StoreExtras, j.Seed)
	}
	// Folded channels share the module's bias (Kernel.BiasEvery): the
	// kernel reads one value a module channel, the reference of the folded
	// convolution each value repeated.
	truth := in
	if every := j.Kernel.BiasEvery; every > 1 && in.B != nil {
		in.B = in.B[:c.OutChannels/every]
		truth.B = geom.SharedBias(in.B, every)
	}
	y, yLast, t, err := run(j, module, in)
	if errors.Is(err, cu.NoBinaryForGpu) {
		out.NotSupported = fmt.Sprintf("loading %s on %s (compute capability %s): %v", LoadedAs(arch), out.Device, out.CC, err)
		return out
	}
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Time = t
	if yLast != nil {
		for i := range y {
			if math.Float32bits(y[i]) != math.Float32bits(yLast[i]) {
				out.Nondeterministic++
			}
		}
	}
	o, cmp := Compare(c, truth, j.Store, y, j.Compare)
	out.NaN, out.Unwritten, out.RelL2 = o.NaN, o.Unwritten, Float(o.RelL2)
	if o.Err != nil {
		out.Error = o.Err.Error()
	}
	if cmp.Count > 0 {
		out.Compared = &cmp
	}
	return out
}

// run does the device part of Execute with module (a cubin, or PTX that the
// driver JIT-compiles as it loads it) and returns the checked output, the
// output after the last timed forward (nil without timing) and the timing.
func run(j *Job, module string, in Inputs) (y, yLast []float32, t *Timing, err error) {
	k, c := j.Kernel, j.Kernel.Conv
	dev, err := cu.GetDevice(0)
	if err != nil {
		return nil, nil, nil, err
	}
	// The device's primary context, as the CUDA runtime (and so PyTorch)
	// uses: cuDevicePrimaryCtxRetain is the same entry point in every
	// driver, unlike cuCtxCreate (versioned _v2 to _v4 up to CUDA 13).
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("retaining the primary context: %w", err)
	}
	defer dev.ReleasePrimaryCtx()
	if err := cu.SetCurrentContext(ctx); err != nil {
		return nil, nil, nil, fmt.Errorf("making the context current: %w", err)
	}

	mod, err := cu.Load(module)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("loading %s: %w", module, err)
	}
	defer mod.Unload()
	mainFn, err := mod.Function(k.Function)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.Function, err)
	}
	if k.DynamicSmem > 0 {
		if err := allowDynamicSmem(mainFn, k.DynamicSmem); err != nil {
			return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.Function, err)
		}
	}
	var repackFn, relayoutFn, fillFn, addFn cu.Function
	if k.Repack != "" {
		if repackFn, err = mod.Function(k.Repack); err != nil {
			return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.Repack, err)
		}
	}
	if k.Relayout != "" {
		if relayoutFn, err = mod.Function(k.Relayout); err != nil {
			return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.Relayout, err)
		}
	}
	if k.Fill != "" {
		if fillFn, err = mod.Function(k.Fill); err != nil {
			return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.Fill, err)
		}
	}
	if k.AddSplits != "" {
		if addFn, err = mod.Function(k.AddSplits); err != nil {
			return nil, nil, nil, fmt.Errorf("kernel %s: %w", k.AddSplits, err)
		}
	}

	var bufs []cu.DevicePtr
	defer func() {
		for _, p := range bufs {
			cu.MemFree(p)
		}
	}()
	alloc := func(what string, n int) (cu.DevicePtr, error) {
		if n == 0 {
			return 0, nil
		}
		p, err := cu.MemAlloc(int64(n) * 4)
		if err != nil {
			return 0, fmt.Errorf("allocating %s (%d floats): %w", what, n, err)
		}
		bufs = append(bufs, p)
		return p, nil
	}
	upload := func(what string, host []float32) (cu.DevicePtr, error) {
		p, err := alloc(what, len(host))
		if err == nil && len(host) > 0 {
			if err = cu.MemcpyHtoD(p, unsafe.Pointer(&host[0]), int64(len(host))*4); err != nil {
				err = fmt.Errorf("copying %s to the device: %w", what, err)
			}
		}
		return p, err
	}
	// Each kernel argument is one 8-byte slot; a device pointer's slot
	// holds its address, a missing bias is a null pointer.
	var xp, xrp, wp, wtp, bp, yp, partp cu.DevicePtr
	if xp, err = upload("x", in.X); err != nil {
		return nil, nil, nil, err
	}
	if wp, err = upload("weight", in.W); err != nil {
		return nil, nil, nil, err
	}
	if bp, err = upload("bias", in.B); err != nil {
		return nil, nil, nil, err
	}
	if wtp, err = alloc("repacked weight", k.RepackLen); err != nil {
		return nil, nil, nil, err
	}
	if xrp, err = alloc("re-laid input", k.RelaidLen); err != nil {
		return nil, nil, nil, err
	}
	if yp, err = alloc("y", c.OutputLen()); err != nil {
		return nil, nil, nil, err
	}
	// A split_k kernel's partial outputs, one copy of y per split (none
	// without split_k).
	partLen := k.WorkspaceLen
	if partp, err = alloc("split partial outputs", partLen); err != nil {
		return nil, nil, nil, err
	}
	// The tensors a level-2 kernel's store reads: the ops' drawn values
	// (Compare applies the same ops), zeros where the store applies none.
	var store []cu.DevicePtr
	for i, n := range k.StoreExtras {
		if n == 0 {
			break
		}
		host := make([]float32, n)
		if i < len(in.Extras) {
			host = in.Extras[i]
		}
		p, err := upload(fmt.Sprintf("store extra %d", i), host)
		if err != nil {
			return nil, nil, nil, err
		}
		store = append(store, p)
	}
	poison := func() error {
		if k.RepackLen > 0 {
			if err := cu.MemsetD32(wtp, wtPoison, int64(k.RepackLen)); err != nil {
				return err
			}
		}
		if k.RelaidLen > 0 {
			if err := cu.MemsetD32(xrp, wtPoison, int64(k.RelaidLen)); err != nil {
				return err
			}
		}
		if k.AddSplits != "" {
			if err := cu.MemsetD32(partp, PoisonBits, int64(partLen)); err != nil {
				return err
			}
		}
		return cu.MemsetD32(yp, PoisonBits, int64(c.OutputLen()))
	}
	repackArgs := []unsafe.Pointer{unsafe.Pointer(&wp), unsafe.Pointer(&wtp)}
	// With a re-laid input the main kernel reads the copy, not x.
	mainIn := &xp
	if k.RelaidLen > 0 {
		mainIn = &xrp
	}
	relayoutArgs := []unsafe.Pointer{unsafe.Pointer(&xp), unsafe.Pointer(&xrp)}
	// The fill and the main kernel take the store's tensors between the
	// bias and y.
	var storeArgs []unsafe.Pointer
	for i := range store {
		storeArgs = append(storeArgs, unsafe.Pointer(&store[i]))
	}
	fillArgs := append(append([]unsafe.Pointer{unsafe.Pointer(&bp)}, storeArgs...), unsafe.Pointer(&yp))
	// Without a re-layout the main kernel reads the weight as it is.
	mainW := &wtp
	if k.Repack == "" {
		mainW = &wp
	}
	// A split_k main kernel writes the partial outputs (and takes no
	// bias); the kernel that adds them writes y.
	mainOut := &yp
	if k.AddSplits != "" {
		mainOut = &partp
	}
	mainArgs := append(append([]unsafe.Pointer{unsafe.Pointer(mainIn), unsafe.Pointer(mainW), unsafe.Pointer(&bp)}, storeArgs...), unsafe.Pointer(mainOut))
	addArgs := []unsafe.Pointer{unsafe.Pointer(&partp), unsafe.Pointer(&bp), unsafe.Pointer(&yp)}
	repackBlocks := k.RepackBlocks
	forward := func() error {
		if k.Repack != "" {
			if err := repackFn.Launch(repackBlocks, 1, 1, plan.RepackBlockThreads, 1, 1, 0, cu.NoStream, repackArgs); err != nil {
				return fmt.Errorf("launching %s<<<%d, %d>>>: %w", k.Repack, repackBlocks, plan.RepackBlockThreads, err)
			}
		}
		if k.Relayout != "" {
			if err := relayoutFn.Launch(k.RelayoutBlocks, 1, 1, plan.RelayoutBlockThreads, 1, 1, 0, cu.NoStream, relayoutArgs); err != nil {
				return fmt.Errorf("launching %s<<<%d, %d>>>: %w", k.Relayout, k.RelayoutBlocks, plan.RelayoutBlockThreads, err)
			}
		}
		if k.Fill != "" {
			if err := fillFn.Launch(k.FillBlocks, 1, 1, plan.FillBlockThreads, 1, 1, 0, cu.NoStream, fillArgs); err != nil {
				return fmt.Errorf("launching %s<<<%d, %d>>>: %w", k.Fill, k.FillBlocks, plan.FillBlockThreads, err)
			}
		}
		if err := mainFn.Launch(k.Grid[0], k.Grid[1], k.Grid[2], k.Threads, 1, 1, k.DynamicSmem, cu.NoStream, mainArgs); err != nil {
			return fmt.Errorf("launching %s<<<%v, %d>>>: %w", k.Function, k.Grid, k.Threads, err)
		}
		if k.AddSplits != "" {
			if err := addFn.Launch(k.AddSplitsBlocks, 1, 1, plan.AddSplitsBlockThreads, 1, 1, 0, cu.NoStream, addArgs); err != nil {
				return fmt.Errorf("launching %s<<<%d, %d>>>: %w", k.AddSplits, k.AddSplitsBlocks, plan.AddSplitsBlockThreads, err)
			}
		}
		return nil
	}
	download := func() ([]float32, error) {
		host := make([]float32, c.OutputLen())
		if err := cu.MemcpyDtoH(unsafe.Pointer(&host[0]), yp, int64(len(host))*4); err != nil {
			return nil, fmt.Errorf("copying y back: %w", err)
		}
		return host, nil
	}

	if err := poison(); err != nil {
		return nil, nil, nil, fmt.Errorf("poisoning the outputs: %w", err)
	}
	if err := forward(); err != nil {
		return nil, nil, nil, err
	}
	if err := cu.Synchronize(); err != nil {
		return nil, nil, nil, fmt.Errorf("running the kernels: %w", err)
	}
	if y, err = download(); err != nil {
		return nil, nil, nil, err
	}
	if j.Timing == nil {
		return y, nil, nil, nil
	}

	tc := *j.Timing
	flush, err := alloc("L2 flush buffer", int(tc.FlushBytes/4))
	if err != nil {
		return nil, nil, nil, err
	}
	start, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cu.DestroyEvent(&start)
	end, err := cu.MakeEvent(cu.DefaultEvent)
	if err != nil {
		return nil, nil, nil, err
	}
	defer cu.DestroyEvent(&end)
	for range tc.Warmup {
		if err := forward(); err != nil {
			return nil, nil, nil, err
		}
	}
	if err := cu.Synchronize(); err != nil {
		return nil, nil, nil, fmt.Errorf("warm-up: %w", err)
	}
	ms := make([]float64, tc.Runs)
	for i := range ms {
		// The flush is queued before the start event: it evicts the L2
		// (inputs and weight come from HBM, as in the evaluator) without
		// being timed.
		if flush != 0 {
			if err := cu.MemsetD32Async(flush, uint(i), int64(tc.FlushBytes/4), cu.NoStream); err != nil {
				return nil, nil, nil, fmt.Errorf("flushing L2: %w", err)
			}
		}
		if err := start.Record(cu.NoStream); err != nil {
			return nil, nil, nil, err
		}
		if err := forward(); err != nil {
			return nil, nil, nil, err
		}
		if err := end.Record(cu.NoStream); err != nil {
			return nil, nil, nil, err
		}
		if err := end.Synchronize(); err != nil {
			return nil, nil, nil, fmt.Errorf("timed run %d: %w", i, err)
		}
		if ms[i], err = start.Elapsed(end); err != nil {
			return nil, nil, nil, err
		}
	}
	if yLast, err = download(); err != nil {
		return nil, nil, nil, err
	}
	s := Summarize(ms)
	return y, yLast, &s, nil
}
