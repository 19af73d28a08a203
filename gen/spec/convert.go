package spec

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// Version 1 wrote the CUDA choice flat: kernel.precision and one
// kernel.tile mapping of every family's options, told apart by flags
// (direct, wgmma) and the precision. v1Keys is that mapping's key order
// as version 1 printed it; the verifier's records and reports keep that
// form (FlatV1).
var v1Keys = []string{"bm", "bn", "bk", "tm", "tn", "wm", "wn", "tw", "min_blocks", "slabs", "warpgroups", "span", "stages",
	"presplit", "cp_async", "direct", "wgmma", "kw_in_n", "park_sums", "bulk_weights", "winograd", "early_inputs", "phase_split", "split_k", "spectral"}

// FlatV1 renders a family's options as version 1's flat tile mapping,
// "{bm: 128, ..., direct: true}" (the family flag where it had one), the
// form the verifier records a kernel's tile in.
func FlatV1(f Family) string {
	set := map[string]string{}
	for _, o := range options(reflect.ValueOf(f)) {
		if !o.v.IsZero() {
			set[o.key] = scalarText(o.v)
		}
	}
	switch f.(type) {
	case Direct:
		set["direct"] = "true"
	case WGMMA:
		set["wgmma"] = "true"
	case Spectral:
		set["spectral"] = "true"
	}
	var out []string
	for _, k := range v1Keys {
		if v, ok := set[k]; ok {
			out = append(out, k+": "+v)
		}
	}
	return "{" + strings.Join(out, ", ") + "}"
}

// ConvertV1 rewrites a version-1 spec as version 2, keeping the rest of
// the document and its comments: version becomes 2, kernel.precision
// and kernel.tile become kernel.cuda's family (a tile with direct or
// wgmma is that family, else precision 3xtf32 is mma, else ffma), and a
// kernel precision the Triton kernel inherited moves into kernel.triton.
// The comments of the keys it removes go to kernel.cuda's key, and a
// tuning note above kernel names what it tuned as version 2 does.
func ConvertV1(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("not a spec: the document is not a mapping")
	}
	root := doc.Content[0]
	if v := MapValue(root, "version"); v == nil || v.Value != "1" {
		return nil, fmt.Errorf("not a version-1 spec")
	}
	MapValue(root, "version").Value = "2"
	if k := MapValue(root, "kernel"); k != nil {
		if err := convertKernel(k); err != nil {
			return nil, err
		}
	}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if key := root.Content[i]; key.Value == "kernel" {
			key.HeadComment = strings.Replace(key.HeadComment, "# precision and tile tuned on ", "# cuda tuned on ", 1)
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// convertKernel turns a version-1 kernel mapping into version 2's in place.
func convertKernel(k *yaml.Node) error {
	if k.Kind != yaml.MappingNode {
		return fmt.Errorf("kernel: not a mapping")
	}
	precision := "fp32"
	if p := MapValue(k, "precision"); p != nil {
		precision = p.Value
	}
	tile := MapValue(k, "tile")
	var comments []string
	keep := k.Content[:0:0]
	at := -1 // where kernel.cuda goes: precision's or tile's place
	for i := 0; i+1 < len(k.Content); i += 2 {
		key := k.Content[i]
		if key.Value == "precision" || key.Value == "tile" {
			if at < 0 {
				at = len(keep)
			}
			for _, c := range []string{key.HeadComment, key.LineComment, k.Content[i+1].LineComment, key.FootComment} {
				if c != "" {
					comments = append(comments, c)
				}
			}
			continue
		}
		keep = append(keep, key, k.Content[i+1])
	}
	family, opts := "ffma", &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
	if tile != nil {
		if tile.Kind != yaml.MappingNode {
			return fmt.Errorf("kernel.tile: not a mapping")
		}
		for i := 0; i+1 < len(tile.Content); i += 2 {
			key, v := tile.Content[i], tile.Content[i+1]
			switch {
			case (key.Value == "direct" || key.Value == "wgmma") && v.Value == "true":
				family = key.Value
			case key.Value == "direct" || key.Value == "wgmma":
			default:
				opts.Content = append(opts.Content, key, v)
			}
		}
	}
	if family == "ffma" && precision == "3xtf32" {
		family = "mma"
	}
	if family != "ffma" || len(opts.Content) > 0 {
		cuda := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle, Content: []*yaml.Node{PlainScalar(family), opts}}
		key := PlainScalar("cuda")
		key.HeadComment = strings.Join(comments, "\n")
		if at < 0 {
			at = len(keep)
		}
		keep = slices.Insert(keep, at, key, cuda)
	}
	k.Content = keep
	// The Triton kernel computed in kernel.precision unless it set its own.
	backends := MapValue(k, "backends")
	triton := MapValue(k, "triton")
	usesTriton := triton != nil
	if backends != nil {
		for _, b := range backends.Content {
			usesTriton = usesTriton || b.Value == "triton"
		}
	}
	if precision != "fp32" && usesTriton && (triton == nil || MapValue(triton, "precision") == nil) {
		if triton == nil {
			triton = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			k.Content = append(k.Content, PlainScalar("triton"), triton)
		}
		if triton.Kind != yaml.MappingNode {
			return fmt.Errorf("kernel.triton: not a mapping")
		}
		triton.Content = append([]*yaml.Node{PlainScalar("precision"), PlainScalar(precision)}, triton.Content...)
	}
	return nil
}

// PlainScalar is a YAML scalar node of v, for edits of a spec's node tree.
func PlainScalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

// MapValue is the value node of key in the mapping node m, or nil.
func MapValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// v1KernelSection is the version-2 form of a version-1 document's kernel
// section, for the error that refuses version 1 ("" where it cannot be
// converted).
func v1KernelSection(root *yaml.Node) string {
	k := MapValue(root, "kernel")
	if k == nil {
		return "kernel: (as it is: no precision or tile)"
	}
	var c yaml.Node
	if err := deepCopy(k, &c); err != nil || convertKernel(&c) != nil {
		return ""
	}
	section := &yaml.Node{Kind: yaml.MappingNode, Content: []*yaml.Node{PlainScalar("kernel"), &c}}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if enc.Encode(section) != nil || enc.Close() != nil {
		return ""
	}
	return strings.TrimRight(buf.String(), "\n")
}

// deepCopy copies a node tree (the error's conversion leaves the
// decoded document as it was).
func deepCopy(n *yaml.Node, out *yaml.Node) error {
	*out = *n
	out.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		out.Content[i] = &yaml.Node{}
		if err := deepCopy(c, out.Content[i]); err != nil {
			return err
		}
	}
	return nil
}

// V1CUDA is the kernel.cuda flow mapping that version 1's precision and
// tile flow mapping (tile may be empty) become, keeping the tile's key
// order: "{direct: {bn: 8, tw: 16}}" for "{direct: true, bn: 8, tw: 16}".
// Empty where they name the default, FFMA with every option the plan's.
func V1CUDA(precision, tile string) (string, error) {
	src := "precision: " + precision + "\n"
	if tile != "" {
		src += "tile: " + tile + "\n"
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(src), &doc); err != nil {
		return "", err
	}
	k := doc.Content[0]
	if err := convertKernel(k); err != nil {
		return "", err
	}
	cuda := MapValue(k, "cuda")
	if cuda == nil {
		return "", nil
	}
	out, err := yaml.Marshal(cuda)
	return strings.TrimSpace(string(out)), err
}
