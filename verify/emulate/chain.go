package emulate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"convtgen/gen/plan"
)

// A submission with ops around the convolution (plan.Chain) runs its
// whole forward here: the host wrapper's own forward function (from
// HOST_SOURCE), compiled against a stand-in for the few torch calls it
// makes, with each <<<>>> launch run by the emulator in the order and
// with the grid it is written with. The convolution's host part is
// replaced by the emulated convolution (the driver's run_conv, its
// stores counted as for a plain kernel); tensors the wrapper allocates
// with torch::empty are NaN-poisoned, so an output no pass writes stays
// NaN.

// torchShim stands in for the torch and CUDA runtime calls of the
// forward function: tensors on the host, contiguous, of float32, float64
// or int64; TORCH_CHECK ends the run (exit status 7).
const torchShim = `
#include <initializer_list>
#include <string>

struct dim3 {
    unsigned x, y, z;
    dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
    operator dim3_() const { return {x, y, z}; }
};
typedef int cudaError_t;
static constexpr cudaError_t cudaSuccess = 0;
inline cudaError_t cudaGetLastError() { return cudaSuccess; }
inline const char* cudaGetErrorString(cudaError_t) { return "no error"; }

#define TORCH_CHECK(cond, ...) do { if (!(cond)) { std::fprintf(stderr, "TORCH_CHECK failed: %s\n", #cond); std::exit(7); } } while (0)

namespace torch {
// The stand-in's tensors are flat: a shape check compares element counts.
struct IntArrayRef {
    long long n;
    IntArrayRef(long long n_) : n(n_) {}
    IntArrayRef(std::initializer_list<long long> s) : n(1) { for (long long d : s) n *= d; }
    bool operator==(const IntArrayRef& o) const { return n == o.n; }
};
enum ScalarType { kFloat32, kFloat64, kInt64 };
inline size_t elem_size(ScalarType t) { return t == kFloat32 ? 4 : 8; }
struct TensorOptions {
    ScalarType type = kFloat32;
    TensorOptions dtype(ScalarType t) const { return {t}; }
};
struct Tensor {
    std::shared_ptr<std::vector<unsigned char>> store;
    std::vector<long long> shape;
    ScalarType type = kFloat32;
    long long numel() const { long long n = 1; for (long long s : shape) n *= s; return n; }
    void* data_ptr() const { return store->data(); }
    bool is_cuda() const { return store != nullptr; }
    bool is_contiguous() const { return true; }
    ScalarType scalar_type() const { return type; }
    TensorOptions options() const { return {type}; }
    IntArrayRef sizes() const { return IntArrayRef(numel()); }
    Tensor view(std::initializer_list<long long> s) const
    {
        Tensor t = *this;
        t.shape.assign(s.begin(), s.end());
        TORCH_CHECK(t.numel() == numel(), "view of another size");
        return t;
    }
};
inline Tensor make(std::vector<long long> shape, TensorOptions o, bool zero)
{
    Tensor t;
    t.shape = std::move(shape);
    t.type = o.type;
    t.store = std::make_shared<std::vector<unsigned char>>(t.numel() * elem_size(o.type));
    for (long long i = 0; i < t.numel(); ++i) {
        if (o.type == kFloat32) reinterpret_cast<float*>(t.data_ptr())[i] = zero ? 0.0f : NAN;
        else if (o.type == kFloat64) reinterpret_cast<double*>(t.data_ptr())[i] = zero ? 0.0 : NAN;
        else reinterpret_cast<long long*>(t.data_ptr())[i] = zero ? 0 : 0x7ff8dead7ff8deadll;
    }
    return t;
}
inline Tensor empty(std::initializer_list<long long> s, TensorOptions o) { return make(s, o, false); }
inline Tensor zeros(std::initializer_list<long long> s, TensorOptions o) { return make(s, o, true); }
}  // namespace torch

inline uint64_t emu_seed;
inline unsigned emu_launches;

// emu_launch runs one <<<grid, threads>>> launch of the forward function.
template <class Kernel> void emu_launch(dim3 grid, unsigned threads, Kernel kernel)
{
    ++emu_launches;
    run_blocks(grid, threads, emu_seed == 0 ? 0 : emu_seed + 16 + emu_launches, kernel);
}

#ifndef EMU_SPECTRAL
// conv_part stands in for the convolution's host part: the emulated
// convolution into a NaN-poisoned output, its store given the extras
// emu_store_extras names (the tensors its fused ops read).
static torch::Tensor conv_part(torch::Tensor x, torch::Tensor weight, torch::Tensor bias, const std::vector<torch::Tensor>& extras)
{
    TORCH_CHECK(x.numel() == (long long)emu_x_len, "the convolution's input");
    const float* store[sizeof emu_store_extras / sizeof emu_store_extras[0]] = {};
    for (size_t i = 0; i + 1 < sizeof emu_store_extras / sizeof emu_store_extras[0]; ++i)
        store[i] = (const float*)extras.at(emu_store_extras[i]).data_ptr();
    auto y = torch::make({(long long)(emu_y_len / (emu_cout * emu_out[0] * emu_out[1] * emu_out[2])), emu_cout,
                          (long long)emu_out[0], (long long)emu_out[1], (long long)emu_out[2]}, x.options(), false);
    run_conv((const float*)x.data_ptr(), (const float*)weight.data_ptr(), bias.is_cuda() ? (const float*)bias.data_ptr() : nullptr,
             store, (float*)y.data_ptr(), emu_seed);
    return y;
}

// The host wrapper's other forms of the call: without the bias, without
// the extras (a store that reads none).
static torch::Tensor conv_part(torch::Tensor x, torch::Tensor weight, const std::vector<torch::Tensor>& extras)
{
    return conv_part(x, weight, torch::Tensor(), extras);
}
static torch::Tensor conv_part(torch::Tensor x, torch::Tensor weight, torch::Tensor bias = torch::Tensor())
{
    return conv_part(x, weight, bias, {});
}
#endif
`

// chainMain reads the forward's input, the weight, the bias and the
// extras, runs the forward function and writes its output and the extras
// after it (a BatchNorm's running statistics).
const chainMain = `
static torch::Tensor load_tensor(const char* path, long long n, torch::ScalarType t)
{
    torch::Tensor v = torch::make({n}, {t}, true);
    FILE* f = std::fopen(path, "rb");
    if (!f || std::fread(v.data_ptr(), torch::elem_size(t), n, f) != (size_t)n) { std::fprintf(stderr, "cannot read %s\n", path); std::exit(2); }
    std::fclose(f);
    return v;
}

static void save_tensor(const std::string& path, const torch::Tensor& v)
{
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f || std::fwrite(v.data_ptr(), torch::elem_size(v.type), v.numel(), f) != (size_t)v.numel()) { std::fprintf(stderr, "cannot write %s\n", path.c_str()); std::exit(2); }
    std::fclose(f);
}

int main(int argc, char** argv)
{
    const int extras_n = sizeof emu_extra_len / sizeof emu_extra_len[0] - 1;
    if (argc != 6 + extras_n) { std::fprintf(stderr, "usage: x w bias|- y seed extras...\n"); return 2; }
    emu_seed = std::strtoull(argv[5], nullptr, 10);
    torch::Tensor x = load_tensor(argv[1], emu_forward_x_len, torch::kFloat32), w = load_tensor(argv[2], emu_forward_w_len, torch::kFloat32);
    std::vector<torch::Tensor> extras;
    for (int i = 0; i < extras_n; ++i) extras.push_back(load_tensor(argv[6 + i], emu_extra_len[i], emu_extra_int64[i] ? torch::kInt64 : torch::kFloat32));
#if EMU_BIAS
    torch::Tensor y = EMU_FORWARD(x, w, load_tensor(argv[3], emu_bias_len, torch::kFloat32), extras);
#else
    torch::Tensor y = EMU_FORWARD(x, w, extras);
#endif
    TORCH_CHECK(y.numel() == emu_final_len, "the forward's output");
    save_tensor(argv[4], y);
    for (int i = 0; i < extras_n; ++i) save_tensor(std::string(argv[6 + i]) + ".after", extras[i]);
    return 0;
}
`

// chainConstants: the forward's input and weight lengths, the extras (lengths and
// whether int64; a trailing 0 so that none is an array of one), the ones
// the convolution's store reads (indices, a trailing -1), the output's
// length, the forward function's name.
const chainConstants = `
static constexpr size_t emu_forward_x_len = %d, emu_forward_w_len = %d;
static constexpr long long emu_extra_len[] = {%s0}, emu_final_len = %d;
static constexpr int emu_store_extras[] = {%s-1};
static constexpr bool emu_extra_int64[] = {%sfalse};
#define EMU_BIAS %d
#define EMU_FORWARD %s
`

var (
	launchRe    = regexp.MustCompile(`(?s)(\w+)<<<(.+?)>>>\((.*?)\);`)
	forwardRe   = regexp.MustCompile(`(?m)^torch::Tensor (\w+)\(torch::Tensor x, `)
	convPartSig = "static torch::Tensor conv_part("
)

// chainHost is the forward function of host (a HOST_SOURCE) for the
// host: no torch header, the convolution's host part removed (the
// driver's stands in), each launch through emu_launch.
func chainHost(host string) (string, string, error) {
	host = strings.Replace(host, "#include <torch/extension.h>", "", 1)
	i := strings.Index(host, convPartSig)
	if i < 0 {
		return "", "", errors.New("emulate: the host source has no conv_part (a submission without ops around the convolution?)")
	}
	end := strings.Index(host[i:], "\n}\n")
	if end < 0 {
		return "", "", errors.New("emulate: conv_part has no end")
	}
	return emuForward(host[:i] + host[i+end+3:])
}

// emuForward is the forward function of a host source with each launch
// through emu_launch, and the function's name.
func emuForward(host string) (string, string, error) {
	m := forwardRe.FindStringSubmatch(host)
	if m == nil {
		return "", "", errors.New("emulate: the host source has no forward function")
	}
	var bad error
	host = launchRe.ReplaceAllStringFunc(host, func(s string) string {
		p := launchRe.FindStringSubmatch(s)
		cfg := p[2]
		k := strings.LastIndex(cfg, ",")
		if k < 0 || strings.Count(cfg, ",") > 1 && !strings.HasPrefix(cfg, "dim3(") {
			bad = fmt.Errorf("emulate: launch %s<<<%s>>>: want <<<grid, threads>>>", p[1], cfg)
			return s
		}
		return fmt.Sprintf("emu_launch(dim3(%s), %s, [&] { %s(%s); });", strings.TrimSpace(cfg[:k]), strings.TrimSpace(cfg[k+1:]), p[1], p[3])
	})
	return host, m[1], bad
}

// ChainProgram is a submission's whole forward compiled for the host.
type ChainProgram struct {
	exe    string
	launch plan.Launch
	chain  *plan.Chain
	xLen   int
	// Seed orders the blocks and threads of every launch (as Program's).
	Seed uint64
}

// BuildChain compiles the forward of an emitted CUDA submission (its
// KERNEL_SOURCE and HOST_SOURCE; plan p, which has ops around the
// convolution) into a host program under dir.
func BuildChain(ctx context.Context, cxx, dir, kernel, host string, p *plan.Plan) (*ChainProgram, error) {
	ch := p.Epilogue.Chain
	if !ch.Any() {
		return nil, errors.New("emulate: the plan has no ops around the convolution (Build runs it)")
	}
	l := p.Launch("")
	conv, err := convSource(kernel, l)
	if err != nil {
		return nil, err
	}
	fwd, name, err := chainHost(host)
	if err != nil {
		return nil, err
	}
	var lens, ints, store strings.Builder
	for _, e := range ch.Extras {
		fmt.Fprintf(&lens, "%d, ", e.Len)
		fmt.Fprintf(&ints, "%t, ", e.Int64())
	}
	for _, e := range p.Epilogue.Extras {
		fmt.Fprintf(&store, "%d, ", e.Arg)
	}
	xLen := l.Conv.InputLen()
	if len(ch.Prologue) > 0 {
		xLen = ch.Prologue[0].InLen
	}
	bias := 0
	if l.Conv.Bias {
		bias = 1
	}
	wLen := l.Conv.WeightLen()
	if f := p.DepthFold; f != nil {
		wLen = f.Problem.WeightLen() // the module's weight, before the fold re-lays it
	}
	consts := fmt.Sprintf(chainConstants, xLen, wLen, lens.String(), finalLen(ch), store.String(), ints.String(), bias, name)
	exe, seed, err := compile(ctx, cxx, dir, "#define EMU_CHAIN 1\n"+conv+driver+consts+torchShim+fwd+chainMain)
	if err != nil {
		return nil, err
	}
	return &ChainProgram{exe: exe, launch: l, chain: ch, xLen: xLen, Seed: seed}, nil
}

func finalLen(ch *plan.Chain) int {
	n := 1
	for _, v := range ch.Final {
		n *= v
	}
	return n
}

// RunChain runs the forward on x (the forward's input: before a
// prologue), w, b (nil without bias) and the extras in the plan's order
// (an int64 extra's values as floats), with Seed's order; it returns the
// output (NaN where nothing wrote it) and the extras after the run.
func (p *ChainProgram) Run(ctx context.Context, x, w, b []float32, extras [][]float32) ([]float32, [][]float32, error) {
	if len(x) != p.xLen || len(extras) != len(p.chain.Extras) {
		return nil, nil, fmt.Errorf("emulate: %d inputs and %d extras, want %d and %d", len(x), len(extras), p.xLen, len(p.chain.Extras))
	}
	dir, err := os.MkdirTemp("", "emulate-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	args := []string{}
	for i, v := range [][]float32{x, w, b} {
		if v == nil {
			args = append(args, "-")
			continue
		}
		path := filepath.Join(dir, strconv.Itoa(i))
		if err := writeFloats(path, v); err != nil {
			return nil, nil, err
		}
		args = append(args, path)
	}
	yPath := filepath.Join(dir, "y")
	args = append(args, yPath, strconv.FormatUint(p.Seed, 10))
	for i, e := range extras {
		path := filepath.Join(dir, "e"+strconv.Itoa(i))
		if err := writeExtra(path, e, p.chain.Extras[i].Int64()); err != nil {
			return nil, nil, err
		}
		args = append(args, path)
	}
	cmd := exec.CommandContext(ctx, p.exe, args...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("emulate: %s (seed %d: %s=%d reproduces): %v\n%s", p.launch.Spec, p.Seed, SeedEnv, p.Seed, err, out)
	}
	y, err := readFloats(yPath, finalLen(p.chain))
	if err != nil {
		return nil, nil, err
	}
	after := make([][]float32, len(extras))
	for i, e := range p.chain.Extras {
		if after[i], err = readExtra(filepath.Join(dir, "e"+strconv.Itoa(i)+".after"), e.Len, e.Int64()); err != nil {
			return nil, nil, err
		}
	}
	return y, after, nil
}

func writeExtra(path string, v []float32, int64s bool) error {
	if !int64s {
		return writeFloats(path, v)
	}
	buf := make([]byte, 8*len(v))
	for i, f := range v {
		u := uint64(int64(f))
		for k := range 8 {
			buf[8*i+k] = byte(u >> (8 * k))
		}
	}
	return os.WriteFile(path, buf, 0o644)
}

func readExtra(path string, n int, int64s bool) ([]float32, error) {
	if !int64s {
		return readFloats(path, n)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(data) != 8*n {
		return nil, fmt.Errorf("emulate: %s holds %d bytes, want %d", path, len(data), 8*n)
	}
	v := make([]float32, n)
	for i := range v {
		var u uint64
		for k := range 8 {
			u |= uint64(data[8*i+k]) << (8 * k)
		}
		v[i] = float32(int64(u))
	}
	return v, nil
}
