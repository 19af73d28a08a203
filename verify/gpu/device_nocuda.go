//go:build !cuda

package gpu

// Enabled reports whether this build can run kernels (build tag "cuda").
const Enabled = false

// DeviceInfo names device 0 of the current CUDA_VISIBLE_DEVICES.
func DeviceInfo() (name, cc string, driver int, err error) { return "", "", 0, ErrNoGPU }

// Execute runs one job on device 0; see device_cuda.go.
func Execute(j *Job) RunOutput { return RunOutput{Error: ErrNoGPU.Error()} }
