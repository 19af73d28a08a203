// Package spec reads convtgen's YAML problem specs: strict decoding with
// line:column diagnostics, then validation, all problems reported at once.
package spec

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"

	"convtgen/gen/geom"
)

// Version is the only spec format version this generator reads.
const Version = 1

// Spec is one decoded problem spec.
type Spec struct {
	Path      string // file the spec came from, for diagnostics
	Name      string
	Title     string
	Problem   Problem
	Reference Reference
	Kernel    Kernel

	nodes   map[string]*yaml.Node // each decoded field's value, for later diagnostics
	refused map[string]bool       // fields with an error (ParsePartial's specs only)
}

// Refused tells whether ParsePartial refused a field, a part of it or a
// section holding it.
func (s *Spec) Refused(field string) bool { return related(s.refused, field) }

// Errorf builds a diagnostic that points at one field of the spec, for
// checks made after decoding (the plan's tile feasibility, for example).
func (s *Spec) Errorf(field, got, format string, args ...any) Error {
	e := Error{File: s.Path, Line: 1, Col: 1, Field: field, Msg: fmt.Sprintf(format, args...), Got: got}
	for f := field; f != ""; f = parent(f) {
		if n := s.nodes[f]; n != nil {
			e.Line, e.Col = n.Line, n.Column
			break
		}
	}
	return e
}

// parent strips the last component of a dotted field path.
func parent(field string) string {
	for i := len(field) - 1; i >= 0; i-- {
		if field[i] == '.' {
			return field[:i]
		}
	}
	return ""
}

// Problem is the effective nn.ConvTranspose3d configuration plus its input.
type Problem struct {
	geom.Conv
	InputDist string // "rand" (U[0,1)) or "randn"
}

// Reference describes the reference model's __init__ and how it builds the
// convolution, so the submission can copy it exactly.
type Reference struct {
	Attr       string   // attribute that holds the nn.ConvTranspose3d
	Params     []Param  // __init__ parameters after self, in order
	Conv       []string // nn.ConvTranspose3d arguments: "expr" or "keyword=expr"
	InitInputs []Value  // what get_init_inputs() returns
}

// Param is one __init__ parameter.
type Param struct {
	Name    string
	Type    string // int, bool or tuple
	Default *Value // nil when the parameter is required
}

// Kernel holds the kernel choices.
type Kernel struct {
	Backends  []string // cuda and/or triton
	Precision string   // fp32 or 3xtf32
	Tile      Tile     // CUDA tiles; zero fields are chosen by the plan
	Triton    Triton   // Triton choices; zero fields are chosen by the generator
}

// PrecisionFor is the precision a backend's kernel computes in: the
// Triton section's own when it sets one, else the kernel's.
func (k Kernel) PrecisionFor(backend string) string {
	if backend == "triton" && k.Triton.Precision != "" {
		return k.Triton.Precision
	}
	return k.Precision
}

// Triton holds the Triton backend's choices: tl.dot's precision (empty:
// the kernel's precision), a program's block of BlockM output positions by
// BlockN output channels stepping BlockK input channels, the warps per
// program and the software-pipelining depth. ChannelsLast makes both dot
// operands contiguous along the reduction (input channels): the input is
// permuted to (batch, D, H, W, channels) inside every forward and the
// weight re-laid out with input channels fastest, the layout the tensor
// cores' shared-memory operands want for 32-bit types. FuseW gives a
// program every output phase along W (stride_w of them) as columns beside
// its channels, so each input tile it loads feeds stride_w times as many
// products and the phases' interleaved outputs are written together (no
// effect at stride_w 1); where stride_w and dilation_w share a factor,
// only the residues that can have taps are columns, and the program also
// writes the bias into the others of its rows. PadInput copies the input into a zero border
// wide enough that no tap reads outside it, so the kernel's input loads
// need no masks (only at stride 1, and where block_k divides the group's
// input channels or the reduction is flat). SplitWeight (3xtf32) makes the weight's TF32 high and
// low parts once per forward and splits only the input tile in the
// kernel, whose three products are then tl.dot calls on exact TF32
// values. FlatK steps the reduction over (tap, input channel) as one
// index, block_k deep whatever the channel count (not with fused W phases,
// which step over offsets). FoldW (with FuseW) gives a fused program
// fold_w consecutive outputs of each W phase as further columns, so even
// at stride_w 1 each input tile feeds several columns per channel: the
// tensor cores get wider tiles where a group has few output channels, at
// the price of some (offset, column) pairs that are no tap (0 or 1: no
// fold).
type Triton struct {
	Precision              string
	BlockM, BlockN, BlockK int
	Warps, Stages          int
	FoldW                  int
	ChannelsLast           bool
	FuseW                  bool
	PadInput               bool
	SplitWeight            bool
	FlatK                  bool
}

// String renders the choices as the spec's YAML flow mapping, with only
// the fields that are set.
func (t Triton) String() string {
	var f []string
	if t.Precision != "" {
		f = append(f, "precision: "+t.Precision)
	}
	for _, kv := range []struct {
		k string
		v int
	}{{"block_m", t.BlockM}, {"block_n", t.BlockN}, {"block_k", t.BlockK}, {"warps", t.Warps}, {"stages", t.Stages}, {"fold_w", t.FoldW}} {
		if kv.v != 0 {
			f = append(f, fmt.Sprintf("%s: %d", kv.k, kv.v))
		}
	}
	for _, kv := range []struct {
		k string
		v bool
	}{{"channels_last", t.ChannelsLast}, {"fuse_w", t.FuseW}, {"pad_input", t.PadInput}, {"split_weight", t.SplitWeight}, {"flat_k", t.FlatK}} {
		if kv.v {
			f = append(f, kv.k+": true")
		}
	}
	return "{" + strings.Join(f, ", ") + "}"
}

// Tile sizes of the implicit GEMM: a block computes BM output positions by
// BN output channels, stepping BK reduction elements at a time. With fp32
// FFMA each thread holds TM x TN results; with 3xtf32 each warp holds a
// WM x WN tile of tensor-core fragments. Zero means "let the plan choose".
type Tile struct {
	BM, BN, BK, TM, TN, WM, WN int
	// Presplit (3xtf32): split operands into their TF32 parts once, when
	// a tile is staged in shared memory, stored in fragment order so each
	// lane loads its fragments with one vector read.
	Presplit bool
	// MinBlocks, when set, is the launch bounds' minimum of resident blocks
	// per SM: 1 lets the compiler use up to min(255, 65536/threads)
	// registers (no spills for occupancy's sake), more caps registers for
	// occupancy.
	MinBlocks int
	// CpAsync: tiles go from global to shared memory with cp.async (sm_80),
	// skipping the registers, while the previous step computes. With
	// wgmma (whose weight always goes this way) the input's fragments do
	// too, each thread's own, as many steps ahead as the weight's: their
	// loads' latency then passes while earlier steps compute, where loaded
	// straight into registers each step waits for its own.
	CpAsync bool
	// Direct (fp32): no GEMM tiles. Each thread computes TM output
	// positions by BN output channels straight from the definition: its
	// inputs go from global memory to its registers (no other thread needs
	// them), and only the weights are staged in shared memory, where every
	// thread reads the same ones. For groups of few channels, where GEMM
	// tiles are mostly staging.
	Direct bool
	// TW (direct): each thread computes TW consecutive outputs along W,
	// of every W residue, instead of TM rows of one phase. Its taps along
	// W then read one window of input columns, loaded once per channel and
	// used by every (output, kw) pair, and its stores are contiguous.
	TW int
	// WGMMA (3xtf32): each warpgroup computes Slabs x 64 output positions
	// of one stride phase by all of a group's output channels (up to 64
	// per block column) as a dense GEMM over the phase's (tap, input
	// channel) pairs. The input is
	// re-laid channels last inside a zero border, so each thread loads its
	// tensor-core fragments straight from global memory, 16 bytes at a
	// time; the weight is laid out per step in the tensor cores' shared-
	// memory image and staged through shared memory. On sm_90 (Hopper) the
	// products are wgmma instructions, elsewhere the same fragments go to
	// mma.sync.
	WGMMA bool
	// Slabs (wgmma): 64-row slabs per warpgroup, 1 or 2 (0: the plan's 2):
	// two slabs share each weight fragment.
	Slabs int
	// Warpgroups (wgmma): warpgroups per block, 1, 2 or 4 (0: 1), each
	// computing its own slabs from the same weight stages: each step's
	// weights cross into shared memory once for that many more rows.
	Warpgroups int
	// Span (wgmma): reduction steps (32 deep each) that one tensor-core sum
	// covers before it is added to the fp32 running sum (0: the plan's 4).
	// The tensor cores do not add in exact fp32, so their sums are kept short.
	// A span that covers every phase's steps keeps no fp32 running sums:
	// a slab's sums in fewer registers, for more blocks per SM.
	Span int
	// Stages (wgmma): reduction steps staged in shared memory, 2 to 8 (0:
	// the plan's, as many up to 4 as fit 96 KiB). Fewer stages leave room
	// for more blocks per SM.
	Stages int
	// KWInN (wgmma): the kernel's W taps become GEMM columns:
	// N = kernel_w x a tile of output channels, K = the (d, h) taps x
	// input channels, and rows are input positions along W, all W
	// residues at once. An output then adds the columns of the kw that
	// reach it, from neighbouring rows, in shared memory. Few output
	// channels make narrow tensor-core products; this widens them.
	KWInN bool
	// ParkSums (wgmma): the fp32 running sums wait in shared memory between
	// spans, not in registers: a slab's sums in half the registers, for
	// more blocks per SM, at the accuracy of the span.
	ParkSums bool
	// BulkWeights (wgmma): on sm_90a one thread fills a weight stage by a
	// bulk copy (the TMA unit), which completes a barrier in shared memory,
	// instead of every thread's 16-byte cp.async copies, so the threads
	// issue no copies.
	BulkWeights bool
	// Winograd (wgmma): a GEMM row is a pair of neighbouring outputs along
	// W, computed by Winograd's F(2,3): four products of transformed inputs
	// and weights where the pair's direct taps take six, so 2/3 of the
	// tensor work. Only for kernel_w 3 with stride_w = dilation_w (each W
	// phase's taps read three consecutive inputs), not with kw_in_n or
	// cp_async.
	Winograd bool
	// EarlyInputs (wgmma): load a step's inputs while the products before
	// it run, even where the plan's register estimate would not (it turns
	// them on by itself where it finds room); the verifier's spill check
	// decides whether the registers held.
	EarlyInputs bool
}

// Value is a Python literal as the reference model sees it: an int, a bool
// or a tuple of ints.
type Value struct {
	Kind  ValueKind
	Int   int
	Bool  bool
	Tuple []int
}

// ValueKind tells which field of a Value is set.
type ValueKind int

const (
	IntValue ValueKind = iota
	BoolValue
	TupleValue
)

// String renders the tile as the spec's YAML flow mapping, with only the
// fields that are set.
func (t Tile) String() string {
	var f []string
	for _, kv := range []struct {
		k string
		v int
	}{{"bm", t.BM}, {"bn", t.BN}, {"bk", t.BK}, {"tm", t.TM}, {"tn", t.TN}, {"wm", t.WM}, {"wn", t.WN}, {"tw", t.TW}, {"min_blocks", t.MinBlocks}, {"slabs", t.Slabs}, {"warpgroups", t.Warpgroups}, {"span", t.Span}, {"stages", t.Stages}} {
		if kv.v != 0 {
			f = append(f, fmt.Sprintf("%s: %d", kv.k, kv.v))
		}
	}
	if t.Presplit {
		f = append(f, "presplit: true")
	}
	if t.CpAsync {
		f = append(f, "cp_async: true")
	}
	if t.Direct {
		f = append(f, "direct: true")
	}
	if t.WGMMA {
		f = append(f, "wgmma: true")
	}
	if t.KWInN {
		f = append(f, "kw_in_n: true")
	}
	if t.ParkSums {
		f = append(f, "park_sums: true")
	}
	if t.BulkWeights {
		f = append(f, "bulk_weights: true")
	}
	if t.Winograd {
		f = append(f, "winograd: true")
	}
	if t.EarlyInputs {
		f = append(f, "early_inputs: true")
	}
	return "{" + strings.Join(f, ", ") + "}"
}
