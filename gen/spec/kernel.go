package spec

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Family is one CUDA kernel family with its options: FFMA, Direct, MMA,
// WGMMA or Spectral. Each is its own struct whose yaml tags are its keys under
// kernel.cuda.<family>: the decoder, the printer and the converter read
// the fields from the tags, so a field is declared once. A zero option is
// the plan's choice.
type Family interface {
	// Key is the family's key under kernel.cuda.
	Key() string
	// Precision is what the family computes in: fp32 or 3xtf32.
	Precision() string
	// check reports the options the family refuses on their own, each
	// with its field's key under the family.
	check(bad func(key, got, format string, args ...any))
}

// FFMA is the fp32 implicit GEMM on FFMA: a block computes BM output
// positions by BN output channels, BK input channels a step, each thread
// TM x TN results, the tiles staged twice in shared memory. SplitK (an
// option of the two GEMM families, FFMA and MMA) shares each phase's
// reduction steps among that many blocks, whose partial sums a second
// kernel adds: for grids too small to fill the GPU, with long reductions.
type FFMA struct {
	BM        int  `yaml:"bm"`
	BN        int  `yaml:"bn"`
	BK        int  `yaml:"bk"`
	TM        int  `yaml:"tm"`
	TN        int  `yaml:"tn"`
	MinBlocks int  `yaml:"min_blocks"`
	CpAsync   bool `yaml:"cp_async"`
	SplitK    int  `yaml:"split_k"`
}

// Direct is the fp32 kernel without GEMM tiles: each thread computes TM
// output positions by BN output channels (all of its block's), loading
// its own inputs straight into registers, BK channels at a time; only the
// weights are staged in shared memory. With TW (its window form) a thread
// holds TW consecutive outputs along W of every W residue instead, and
// reads the window of input columns they need once per (d, h) tap and
// channel. For groups of few channels, where GEMM tiles are mostly
// staging.
type Direct struct {
	BM        int `yaml:"bm"`
	BN        int `yaml:"bn"`
	BK        int `yaml:"bk"`
	TM        int `yaml:"tm"`
	TW        int `yaml:"tw"`
	MinBlocks int `yaml:"min_blocks"`
}

// MMA is the 3xTF32 implicit GEMM on mma.sync m16n8k8: each warp holds a
// WM x WN tile of fragments. Presplit splits the operands into their TF32
// parts once, when a tile is staged, stored in fragment order (one vector
// read per fragment); CpAsync copies the tiles with cp.async; SplitK as
// FFMA's.
type MMA struct {
	BM        int  `yaml:"bm"`
	BN        int  `yaml:"bn"`
	BK        int  `yaml:"bk"`
	WM        int  `yaml:"wm"`
	WN        int  `yaml:"wn"`
	MinBlocks int  `yaml:"min_blocks"`
	Presplit  bool `yaml:"presplit"`
	CpAsync   bool `yaml:"cp_async"`
	SplitK    int  `yaml:"split_k"`
}

// WGMMA is the 3xTF32 kernel of one dense GEMM per stride phase on
// warpgroups (wgmma on sm_90a, mma.sync from the same fragments
// elsewhere); its block shape is the plan's. Slabs: 64-row slabs per
// warpgroup; Warpgroups: per block, sharing the weight stages; Span:
// 32-deep steps per tensor-core sum; Stages: steps of the weight image in
// shared memory. KWInN makes the kernel's W taps GEMM columns; Winograd
// computes pairs of outputs along W by F(2, kernel_w) (the two are options of
// this family only). ParkSums keeps the fp32 running sums in shared
// memory between spans; BulkWeights fills the weight stages by bulk
// copies on sm_90a; EarlyInputs loads a step's inputs during the products
// before it whatever the register estimate says; CpAsync stages the
// input fragments in shared memory. PhaseSplit shares a row tile's
// phases among that many blocks, each a run of consecutive phases (their
// outputs are disjoint: no partial sums), where one block a row tile
// would leave SMs idle; 0 is the plan's choice, 1 no split. Warpgroups 0
// is one.
type WGMMA struct {
	MinBlocks   int  `yaml:"min_blocks"`
	Slabs       int  `yaml:"slabs"`
	Warpgroups  int  `yaml:"warpgroups"`
	Span        int  `yaml:"span"`
	Stages      int  `yaml:"stages"`
	CpAsync     bool `yaml:"cp_async"`
	KWInN       bool `yaml:"kw_in_n"`
	ParkSums    bool `yaml:"park_sums"`
	BulkWeights bool `yaml:"bulk_weights"`
	Winograd    bool `yaml:"winograd"`
	EarlyInputs bool `yaml:"early_inputs"`
	PhaseSplit  int  `yaml:"phase_split"`
}

// Spectral computes no convolution output: where the forward after the
// convolution needs only each (sample, channel)'s mean and each
// channel's variance of it (a training-mode BatchNorm, then a mean over
// the spatial axes), it takes the means from the input's and the
// weight's sums and the variances from the output's discrete Fourier
// spectrum (Parseval), a small complex GEMM per frequency, in fp32. It
// has no options; the plan refuses it where the forward or the padding
// does not allow it.
type Spectral struct{}

func (FFMA) Key() string     { return "ffma" }
func (Direct) Key() string   { return "direct" }
func (MMA) Key() string      { return "mma" }
func (WGMMA) Key() string    { return "wgmma" }
func (Spectral) Key() string { return "spectral" }

func (FFMA) Precision() string     { return "fp32" }
func (Direct) Precision() string   { return "fp32" }
func (MMA) Precision() string      { return "3xtf32" }
func (WGMMA) Precision() string    { return "3xtf32" }
func (Spectral) Precision() string { return "fp32" }

// PerBlock is the warpgroups of a block (Warpgroups, 0 meaning one).
func (w WGMMA) PerBlock() int { return max(1, w.Warpgroups) }

// SplitK is f's split_k where its family has one (FFMA, MMA), else 0.
func SplitK(f Family) int {
	switch t := f.(type) {
	case FFMA:
		return t.SplitK
	case MMA:
		return t.SplitK
	}
	return 0
}

// Families are the CUDA families, by key, as the decoder knows them.
var Families = []Family{FFMA{}, Direct{}, MMA{}, WGMMA{}, Spectral{}}

// CUDA is the kernel section's CUDA choice: one family and its options.
// The zero CUDA is FFMA with every option the plan's.
type CUDA struct{ Family }

// Of is the family, FFMA{} where none is set.
func (c CUDA) Of() Family {
	if c.Family == nil {
		return FFMA{}
	}
	return c.Family
}

// String is the choice as the spec's flow mapping, {family: {options}}.
func (c CUDA) String() string { return "{" + c.Of().Key() + ": " + Flow(c.Of()) + "}" }

// MarshalJSON writes the choice as its flow mapping (tuning's manifest),
// null where none is set (a Triton candidate's), so it reads back unset.
func (c CUDA) MarshalJSON() ([]byte, error) {
	if c.Family == nil {
		return []byte("null"), nil
	}
	return json.Marshal(c.String())
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (c *CUDA) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	f, err := ParseCUDA(s)
	c.Family = f
	return err
}

// ParseCUDA reads a kernel.cuda flow mapping such as "{mma: {bm: 64}}",
// with the spec's rules for the family's options.
func ParseCUDA(flow string) (Family, error) {
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(flow), &n); err != nil || len(n.Content) == 0 {
		return nil, fmt.Errorf("%q: not a kernel.cuda mapping", flow)
	}
	d := &decoder{file: "cuda", pos: map[string]*yaml.Node{}, bad: map[string]bool{}, decoding: true}
	var c CUDA
	d.cuda(n.Content[0], "kernel.cuda", &c)
	d.decoding = false
	if len(d.errs) == 0 {
		d.checkFamily(c.Of(), Kernel{}.CUDAField)
	}
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return c.Of(), nil
}

// option is one tagged field of an options struct.
type option struct {
	key string
	v   reflect.Value
}

// options lists the tagged fields of the struct p points to (or of the
// struct value v), in declaration order.
func options(v reflect.Value) []option {
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var out []option
	for i := range v.NumField() {
		if key := v.Type().Field(i).Tag.Get("yaml"); key != "" {
			out = append(out, option{key, v.Field(i)})
		}
	}
	return out
}

// Flow renders an options struct as a YAML flow mapping of the fields
// that are set, in declaration order.
func Flow(opts any) string {
	var f []string
	for _, o := range options(reflect.ValueOf(opts)) {
		if !o.v.IsZero() {
			f = append(f, o.key+": "+scalarText(o.v))
		}
	}
	return "{" + strings.Join(f, ", ") + "}"
}

func scalarText(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Int:
		return strconv.Itoa(int(v.Int()))
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	}
	return v.String()
}

// decodeOptions fills the struct p points to from a mapping, each key its
// tagged field (unknown keys are errors that list the family's own).
func (d *decoder) decodeOptions(n *yaml.Node, f string, p any) {
	handlers := map[string]func(*yaml.Node, string){}
	for _, o := range options(reflect.ValueOf(p)) {
		v := o.v
		switch v.Kind() {
		case reflect.Int:
			handlers[o.key] = func(n *yaml.Node, f string) { x, _ := d.int(n, f); v.SetInt(int64(x)) }
		case reflect.Bool:
			handlers[o.key] = func(n *yaml.Node, f string) { x, _ := d.bool(n, f); v.SetBool(x) }
		case reflect.String:
			handlers[o.key] = func(n *yaml.Node, f string) { x, _ := d.str(n, f); v.SetString(x) }
		}
	}
	d.fields(n, f, handlers)
}

// cuda decodes kernel.cuda: a mapping of exactly one family key.
func (d *decoder) cuda(n *yaml.Node, f string, c *CUDA) {
	handlers := map[string]func(*yaml.Node, string){}
	for _, fam := range Families {
		handlers[fam.Key()] = func(n *yaml.Node, field string) {
			p := reflect.New(reflect.TypeOf(fam))
			d.decodeOptions(n, field, p.Interface())
			if c.Family != nil {
				d.fail(n, field, "", "kernel.cuda holds one family, and %s is given too: choose one", c.Family.Key())
				return
			}
			c.Family = p.Elem().Interface().(Family)
		}
	}
	d.fields(n, f, handlers)
	if n.Kind == yaml.MappingNode && len(n.Content) == 0 {
		d.fail(n, f, "{}", "must name a family: one of %s", strings.Join(sortedKeys(handlers), ", "))
	}
}
