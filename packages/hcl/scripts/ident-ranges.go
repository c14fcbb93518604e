// ident-ranges asks HashiCorp's hcl/v2 scanner, code point by code point, which
// characters it takes in an identifier, and prints the answer as ranges:
//
//	{"hcl": "<version>", "start": [[lo, hi], ...], "continue": [[lo, hi], ...]}
//
// "start" holds what may open an identifier, "continue" what may follow its first
// character. hcl/v2 generates its scanner with Ragel from Unicode 9.0.0's ID_Start
// and ID_Continue (hclsyntax/generate.go), so these are those tables plus '_' and
// '-' as the grammar adds them, exactly as the compiled scanner has them. Run by
// gen-ident-table.ts; see there.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// lexesAsIdent reports whether src is exactly one identifier token in a
// configuration file, the way the parser reads it.
func lexesAsIdent(src string) bool {
	toks, diags := hclsyntax.LexConfig([]byte(src), "", hcl.InitialPos)
	return !diags.HasErrors() && len(toks) == 2 &&
		toks[0].Type == hclsyntax.TokenIdent && string(toks[0].Bytes) == src &&
		toks[1].Type == hclsyntax.TokenEOF
}

func main() {
	var start, cont [][2]rune
	add := func(rs *[][2]rune, r rune) {
		n := len(*rs)
		if n > 0 && (*rs)[n-1][1] == r-1 {
			(*rs)[n-1][1] = r
		} else {
			*rs = append(*rs, [2]rune{r, r})
		}
	}
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue // surrogates are not characters of valid UTF-8
		}
		s := string(r)
		first, next := lexesAsIdent(s), lexesAsIdent("a"+s)
		// The public check must agree with the configuration scanner.
		if first != hclsyntax.ValidIdentifier(s) || next != hclsyntax.ValidIdentifier("a"+s) {
			fmt.Fprintf(os.Stderr, "U+%04X: the scanner and ValidIdentifier disagree\n", r)
			os.Exit(1)
		}
		if first {
			add(&start, r)
		}
		if next {
			add(&cont, r)
		}
	}
	out := map[string]any{"hcl": os.Getenv("HCL_VERSION"), "start": start, "continue": cont}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
