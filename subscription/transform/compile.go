package transform

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"reflect"
	"strings"

	"github.com/dop251/goja"
	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/file"
	"github.com/dop251/goja/parser"
)

// MaxSourceBytes is the largest source a transformation may have, in UTF-8
// bytes (API.md §16).
const MaxSourceBytes = 64 << 10

// maxNesting bounds how deeply a source's brackets may nest. The parser
// recurses once per level; a source of 64 KiB of "(" would otherwise take
// seconds to reject.
const maxNesting = 500

// wrapperHead and wrapperTail turn a source into one function expression: the
// source's top level becomes a function scope, fresh on every run, and the
// wrapper hands back the handler it declared. The head sits on the source's
// first line, so only that line's columns shift (by len(wrapperHead)).
const (
	wrapperHead = "(function(){"
	wrapperTail = "\nreturn handler;\n})"
)

// Program is a compiled transformation. It is immutable and safe to run in
// many runtimes at once; compile it once per subscription version (see
// [Cache]).
type Program struct {
	prog *goja.Program
	hash [sha256.Size]byte
	// whole makes the engine build the handler's input whole, never lazily
	// (lazy.go): the source names Symbol, and a Symbol-keyed property
	// cannot be set on a lazy object (in sloppy mode the write would be
	// lost without an error).
	whole bool
}

// Hash is the SHA-256 of the program's source: a cache key for a source that
// has no version of its own (the test endpoint's code).
func (p *Program) Hash() [sha256.Size]byte { return p.hash }

// CompileError is a source that cannot be a transformation: a syntax error,
// no top-level handler function, or more than [MaxSourceBytes]. Line and
// Column are 1-based and point into the source (0 when the error has no
// position, such as an oversized source). The API answers it with 422 at
// /transformation/code.
type CompileError struct {
	Line    int
	Column  int
	Message string
}

// Error formats the message with its position.
func (e *CompileError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Message)
	}
	return e.Message
}

// Compile parses src and checks that it is a transformation: at most
// [MaxSourceBytes] UTF-8 bytes, valid JavaScript, and a top-level
// `function handler` (or a top-level variable initialised with a function
// named handler). Any failure is a [*CompileError]. BigInt literals are
// refused: one BigInt operation can take seconds and gigabytes that the time
// and memory limits cannot interrupt.
func Compile(src string) (*Program, error) {
	if len(src) > MaxSourceBytes {
		return nil, &CompileError{Message: fmt.Sprintf("the code is %d bytes, more than the %d allowed", len(src), MaxSourceBytes)}
	}
	if line, col, ok := tooDeep(src); ok {
		return nil, &CompileError{Line: line, Column: col, Message: fmt.Sprintf("brackets nest more than %d levels", maxNesting)}
	}
	tree, err := parser.ParseFile(nil, "handler.js", src, 0, parser.WithDisableSourceMaps)
	if err != nil {
		return nil, compileErrorOf(err, 0)
	}
	if !declaresHandler(tree) {
		return nil, &CompileError{Message: "the code defines no top-level function handler(webhook)"}
	}
	if pos, ok := findBigInt(tree); ok {
		p := tree.File.Position(int(pos) - tree.File.Base())
		return nil, &CompileError{Line: p.Line, Column: p.Column, Message: "BigInt literals are not supported"}
	}
	prog, err := goja.Compile("handler.js", wrapperHead+src+wrapperTail, false)
	if err != nil {
		return nil, compileErrorOf(err, len(wrapperHead))
	}
	return &Program{prog: prog, hash: sha256.Sum256([]byte(src)), whole: wantsWhole(src)}, nil
}

// compileErrorOf turns a parser or compiler error into a CompileError; shift
// is how many columns the wrapper adds to the first line.
func compileErrorOf(err error, shift int) *CompileError {
	ce := &CompileError{Message: truncate(err.Error(), maxErrorBytes)}
	var list parser.ErrorList
	var one *parser.Error
	var syn *goja.CompilerSyntaxError
	switch {
	case errors.As(err, &list) && len(list) > 0:
		ce.Line, ce.Column, ce.Message = list[0].Position.Line, list[0].Position.Column, list[0].Message
	case errors.As(err, &one):
		ce.Line, ce.Column, ce.Message = one.Position.Line, one.Position.Column, one.Message
	case errors.As(err, &syn) && syn.File != nil:
		p := syn.File.Position(syn.Offset)
		ce.Line, ce.Column, ce.Message = p.Line, p.Column, syn.Message
	}
	if ce.Line == 1 {
		ce.Column = max(ce.Column-shift, 1)
	}
	ce.Message = truncate(ce.Message, maxErrorBytes)
	return ce
}

// tooDeep reports the position of the first bracket that nests past
// maxNesting, skipping strings, template literals and comments roughly (a
// false alarm needs 500 levels of brackets inside them).
func tooDeep(src string) (line, col int, deep bool) {
	depth, line, col := 0, 1, 0
	var quote byte
	for i := 0; i < len(src); i++ {
		c := src[i]
		col++
		if c == '\n' {
			line, col = line+1, 0
		}
		switch {
		case quote != 0:
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			line, col = line+1, 0
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return 0, 0, false
			}
			line += strings.Count(src[i:i+2+end], "\n")
			i += end + 3
		case c == '(' || c == '[' || c == '{':
			depth++
			if depth > maxNesting {
				return line, col, true
			}
		case c == ')' || c == ']' || c == '}':
			depth--
		}
	}
	return 0, 0, false
}

// declaresHandler reports whether the program's top level declares handler
// as a function.
func declaresHandler(tree *ast.Program) bool {
	for _, st := range tree.Body {
		switch s := st.(type) {
		case *ast.FunctionDeclaration:
			if s.Function != nil && s.Function.Name != nil && s.Function.Name.Name == "handler" {
				return true
			}
		case *ast.VariableStatement:
			if bindsHandler(s.List) {
				return true
			}
		case *ast.LexicalDeclaration:
			if bindsHandler(s.List) {
				return true
			}
		}
	}
	return false
}

func bindsHandler(list []*ast.Binding) bool {
	for _, b := range list {
		id, ok := b.Target.(*ast.Identifier)
		if !ok || id.Name != "handler" {
			continue
		}
		switch b.Initializer.(type) {
		case *ast.FunctionLiteral, *ast.ArrowFunctionLiteral:
			return true
		}
	}
	return false
}

// findBigInt walks the syntax tree for a BigInt literal.
func findBigInt(tree *ast.Program) (file.Idx, bool) {
	var found file.Idx
	var walk func(v reflect.Value) bool
	bigType := reflect.TypeFor[*big.Int]()
	seen := make(map[uintptr]bool)
	walk = func(v reflect.Value) bool {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if v.IsNil() {
				return false
			}
			if v.Kind() == reflect.Pointer {
				if seen[v.Pointer()] {
					return false
				}
				seen[v.Pointer()] = true
			}
			if lit, ok := reflect.TypeAssert[*ast.NumberLiteral](v); ok {
				if lit.Value != nil && reflect.TypeOf(lit.Value) == bigType {
					found = lit.Idx
					return true
				}
				return false
			}
			return walk(v.Elem())
		case reflect.Struct:
			for i := range v.NumField() {
				if v.Type().Field(i).IsExported() && walk(v.Field(i)) {
					return true
				}
			}
		case reflect.Slice:
			for i := range v.Len() {
				if walk(v.Index(i)) {
					return true
				}
			}
		default:
		}
		return false
	}
	if walk(reflect.ValueOf(tree.Body)) {
		return found, true
	}
	return 0, false
}

// wantsWhole reports whether a source is run on an input built whole from
// the start: it names Symbol (a Symbol key on a lazy object needs the
// re-run anyway) or __proto__ (outside strict code a lazy array drops a
// write of its prototype silently, unseen by any trap: lazy_array.go).
func wantsWhole(src string) bool {
	return strings.Contains(src, "Symbol") || strings.Contains(src, "__proto__")
}
