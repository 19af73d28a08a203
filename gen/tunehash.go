package gen

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

// A tuned choice records what it was tuned for: its note ends with
// "problem <hash>", the hash of the canonical decoded problem (the
// convolution, its bias, which is the epilogue, and the target). A spec
// whose note's hash is not its own problem's holds a choice tuned for
// another shape: the generator warns (TuneWarnings), and the choice is
// kept as written.

// ProblemHash is the hash a tuning note records for a spec's problem on
// target ("" for the problem alone): 12 hex digits of the SHA-256 of the
// decoded fields, written in one fixed order, so that any way of writing
// the same problem gives the same hash.
func ProblemHash(s *spec.Spec, target string) string {
	c := s.Problem.Conv
	text := fmt.Sprintf("convtranspose3d batch=%d in=%d out=%d input=%v kernel=%v stride=%v padding=%v output_padding=%v dilation=%v groups=%d bias=%t target=%s",
		c.Batch, c.InChannels, c.OutChannels, c.In, c.Kernel, c.Stride, c.Padding, c.OutputPadding, c.Dilation, c.Groups, c.Bias, target)
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:6])
}

// hashNote is the part of a tuning note that names the problem.
var hashNote = regexp.MustCompile(`problem ([0-9a-f]{12})\b`)

// hashedNote is a note that ends by naming the problem it was tuned for
// (replacing a name it had).
func hashedNote(note, hash string) string {
	note = strings.TrimRight(hashNote.ReplaceAllString(note, ""), " ;,")
	return note + "; problem " + hash
}

// tunedSections visits the kernel.<target>.cuda and .triton keys of a
// spec document: the key node (which carries the note) and its target.
func tunedSections(doc *yaml.Node, visit func(key *yaml.Node, target, backend string)) {
	if len(doc.Content) == 0 {
		return
	}
	kernel := spec.MapValue(doc.Content[0], "kernel")
	if kernel == nil || kernel.Kind != yaml.MappingNode {
		return
	}
	for _, target := range spec.TargetNames {
		sec := spec.MapValue(kernel, target)
		if sec == nil || sec.Kind != yaml.MappingNode {
			continue
		}
		for i := 0; i+1 < len(sec.Content); i += 2 {
			if k := sec.Content[i]; k.Value == "cuda" || k.Value == "triton" {
				visit(k, target, k.Value)
			}
		}
	}
}

// TuneWarnings are a valid spec's tuned choices whose note names another
// problem than its own, one diagnostic each at the choice's key.
func TuneWarnings(path string, data []byte, s *spec.Spec) spec.Errors {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil {
		return nil
	}
	var out spec.Errors
	tunedSections(&doc, func(key *yaml.Node, target, backend string) {
		m := hashNote.FindStringSubmatch(key.HeadComment)
		if m == nil {
			return
		}
		if want := ProblemHash(s, target); m[1] != want {
			out = append(out, spec.Error{File: path, Line: key.Line, Col: key.Column, Field: "kernel." + target + "." + backend,
				Msg: fmt.Sprintf("warning: tuned for another problem (its note says problem %s; this one is %s): the choice is kept as written; `make tune` re-tunes it, or delete it to let the plan choose", m[1], want),
				Got: m[1]})
		}
	})
	return out
}

// StampTuneNotes rewrites a spec's tuning notes (the comments above
// kernel.<target>.cuda and .triton) to end with the hash of the problem
// they are for, and returns the new bytes (the same bytes where every
// note already says so).
func StampTuneNotes(data []byte, s *spec.Spec) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	changed := false
	tunedSections(&doc, func(key *yaml.Node, target, backend string) {
		if key.HeadComment == "" {
			return
		}
		// The hash ends the note's last line.
		lines := strings.Split(key.HeadComment, "\n")
		last := len(lines) - 1
		lines[last] = "# " + hashedNote(trimComment(lines[last]), ProblemHash(s, target))
		if note := strings.Join(lines, "\n"); note != key.HeadComment {
			key.HeadComment, changed = note, true
		}
	})
	if !changed {
		return data, nil
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// trimComment is a one-line comment's text without its "# ".
func trimComment(c string) string {
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(c), "#"))
}

// StampAll stamps the tuning notes (StampTuneNotes) of the specs under
// only (paths under specs/, nil for all) and returns how many files
// changed.
func StampAll(root string, only []string) (int, error) {
	specs, err := LoadAll(root)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range specs {
		if only != nil && !slices.ContainsFunc(only, func(o string) bool {
			o = strings.TrimSuffix(o, "/")
			return l.Path == o || strings.HasPrefix(l.Path, o+"/")
		}) {
			continue
		}
		path := filepath.Join(root, filepath.FromSlash(l.Path))
		data, err := safeio.ReadRegular(path, safeio.MaxSpecSize)
		if err != nil {
			return n, err
		}
		out, err := StampTuneNotes(data, l.Spec())
		if err != nil {
			return n, fmt.Errorf("%s: %w", l.Path, err)
		}
		if bytes.Equal(out, data) {
			continue
		}
		if err := safeio.WriteWhole(path, out); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}
