// Package spec reads convtgen's YAML problem specs: strict decoding with
// line:column diagnostics, then validation, all problems reported at once.
package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"

	"convtgen/gen/geom"
)

// Version is the only spec format version this generator reads: 2, whose
// kernel section is nested by family (version 1's is converted by
// ConvertV1).
const Version = 2

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
	// Layers are the other attributes __init__ sets, in order; the
	// convolution is created before Layers[ConvAt] (ConvAt 0: first).
	Layers []Layer
	ConvAt int
	// Inputs are forward's inputs (nil: one, x, of the problem's input
	// shape); Prologue runs on the first before the convolution, Forward
	// on the convolution's output.
	Inputs   []Input
	Prologue []Op
	Forward  []Op
	// Env is every __init__ parameter's value (init inputs, then
	// defaults), filled by validation.
	Env map[string]Value
}

// Param is one __init__ parameter.
type Param struct {
	Name    string
	Type    string // int, bool or tuple
	Default *Value // nil when the parameter is required
}

// Kernel holds the kernel choices: the CUDA kernel's family and options,
// and the Triton kernel's.
type Kernel struct {
	Backends []string // cuda and/or triton
	// BackendsOmitted: the spec names no backends, so Backends are the
	// defaults, and the plan leaves out a backend that cannot express the
	// problem (plan.Chain.TritonRefusal) instead of refusing the spec.
	BackendsOmitted bool
	CUDA            CUDA   // the CUDA family; zero options are chosen by the plan
	Triton          Triton // Triton choices; zero fields are chosen by the generator
	// Targets holds a target's own sections (kernel.sm80, kernel.sm90):
	// each cuda or triton given there replaces the common one for that
	// target's submissions.
	Targets map[string]TargetKernel
	// cudaAt and tritonAt are the sections For took CUDA and Triton from
	// ("kernel.sm80"; empty: the common one), for errors that name their
	// fields.
	cudaAt, tritonAt string
}

// TargetKernel is one target's kernel section: its CUDA and Triton
// choices where it gives them (nil: the common ones).
type TargetKernel struct {
	CUDA   *CUDA
	Triton *Triton
}

// TargetNames are the keys of the per-target kernel sections.
var TargetNames = []string{"sm80", "sm90"}

// For is the kernel choices of one target: its own sections where it has
// them, else the common ones. The per-target sections are dropped.
func (k Kernel) For(target string) Kernel {
	out := Kernel{Backends: k.Backends, BackendsOmitted: k.BackendsOmitted, CUDA: k.CUDA, Triton: k.Triton}
	if t, ok := k.Targets[target]; ok {
		if t.CUDA != nil {
			out.CUDA, out.cudaAt = *t.CUDA, "kernel."+target
		}
		if t.Triton != nil {
			out.Triton, out.tritonAt = *t.Triton, "kernel."+target
		}
	}
	return out
}

// CUDAField is the spec field of a CUDA option: "kernel.cuda.<key>", or
// under the target's section where For took the CUDA choice from there.
func (k Kernel) CUDAField(key string) string { return section(k.cudaAt) + ".cuda." + key }

// TritonField is the spec field of a Triton option, like CUDAField.
func (k Kernel) TritonField(key string) string { return section(k.tritonAt) + ".triton." + key }

func section(at string) string {
	if at == "" {
		return "kernel"
	}
	return at
}

// PrecisionFor is the precision a backend's kernel computes in: the CUDA
// family's, or the Triton section's (fp32 unless it sets one).
func (k Kernel) PrecisionFor(backend string) string {
	if backend == "triton" {
		return k.Triton.precision()
	}
	return k.CUDA.Of().Precision()
}

// precision is the section's precision, fp32 where it sets none.
func (t Triton) precision() string {
	if t.Precision != "" {
		return t.Precision
	}
	return DefaultPrecision
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
	Precision    string `yaml:"precision"`
	BlockM       int    `yaml:"block_m"`
	BlockN       int    `yaml:"block_n"`
	BlockK       int    `yaml:"block_k"`
	Warps        int    `yaml:"warps"`
	Stages       int    `yaml:"stages"`
	FoldW        int    `yaml:"fold_w"`
	ChannelsLast bool   `yaml:"channels_last"`
	FuseW        bool   `yaml:"fuse_w"`
	PadInput     bool   `yaml:"pad_input"`
	SplitWeight  bool   `yaml:"split_weight"`
	FlatK        bool   `yaml:"flat_k"`
}

// String renders the choices as the spec's YAML flow mapping, with only
// the fields that are set.
func (t Triton) String() string { return Flow(t) }

// Value is a Python literal as the reference model sees it: an int, a
// float, a bool or a tuple of ints.
type Value struct {
	Kind  ValueKind
	Int   int
	Float float64
	Bool  bool
	Tuple []int
}

// ValueKind tells which field of a Value is set.
type ValueKind int

const (
	IntValue ValueKind = iota
	BoolValue
	TupleValue
	FloatValue
)

// Number is a numeric value as a float64 (an int or a float); ok is false
// for bools and tuples.
func (v Value) Number() (float64, bool) {
	switch v.Kind {
	case IntValue:
		return float64(v.Int), true
	case FloatValue:
		return v.Float, true
	}
	return 0, false
}
