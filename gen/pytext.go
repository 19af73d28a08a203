package gen

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
)

// pyEscape renders s as the body of a double-quoted (or triple-quoted)
// Python string literal that evaluates to s: backslashes and double quotes
// are escaped, and so is every character that is not printable (line
// breaks, NUL, other controls, U+2028, a byte order mark), with Python's
// \n \r \t \xhh \uhhhh \Uhhhhhhhh. Invalid UTF-8 becomes U+FFFD, as Go
// reads it. The result holds no line break and no run of quotes, so it is
// also safe on a comment line and inside a docstring.
func pyEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || r > ' ' && r < 0x7f:
			b.WriteRune(r)
		case r < 0x100 && !(r >= 0xa0 && unicode.IsPrint(r)):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsPrint(r) && r != utf8.RuneError:
			b.WriteRune(r)
		case r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// pyString is s as a Python string literal.
func pyString(s string) string { return `"` + pyEscape(s) + `"` }

// docstringSafe is s as text inside a (non-raw) Python docstring.
func docstringSafe(s string) string { return pyEscape(s) }

// commentSafe is s as text on a Python comment line.
func commentSafe(s string) string { return pyEscape(s) }

// pyIdentRe is what the templates print bare, as a Python, C and path
// name: ASCII only, so no look-alike or line break gets through.
var pyIdentRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// checkIdents refuses to print any of the named strings bare unless it is
// an identifier; validation has already refused such specs, and this keeps
// a plan built another way (random, mutated) from pasting text as code.
func checkIdents(names ...[2]string) error {
	for _, n := range names {
		if !pyIdentRe.MatchString(n[1]) {
			return fmt.Errorf("%s %s is not an identifier: it would be printed as code", n[0], pyString(n[1]))
		}
	}
	return nil
}
