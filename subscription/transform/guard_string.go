package transform

import (
	"strings"

	"github.com/dop251/goja"
)

type (
	getFunc func(path string) (*goja.Object, goja.Callable, error)
	setFunc func(obj *goja.Object, name string, f func(goja.FunctionCall) goja.Value) error
)

// guardString bounds the String built-ins whose result can grow past what
// their arguments hold: repeat, padStart, padEnd, concat, replace,
// replaceAll, split and iterating a string.
func (s *sandbox) guardString(get getFunc, set setFunc) error {
	rt := s.rt
	proto := rt.Get("String").ToObject(rt).Get("prototype").ToObject(rt)
	if err := rt.Get("String").ToObject(rt).Delete("raw"); err != nil {
		return wrapGuard("String.raw", err)
	}
	fns := map[string]goja.Callable{}
	for _, name := range []string{"repeat", "padStart", "padEnd", "replace", "replaceAll", "split"} {
		_, f, err := get("String.prototype." + name)
		if err != nil {
			return err
		}
		fns[name] = f
	}
	if err := set(proto, "repeat", func(c goja.FunctionCall) goja.Value {
		str := c.This.ToString()
		n, count := s.lengthOf(str), c.Argument(0).ToInteger()
		if n > 0 && count > 0 && (count > s.maxStr || n*count > s.maxStr) {
			s.throwRangef("String.prototype.repeat: the result would be more than %d characters", s.maxStr)
		}
		return call(fns["repeat"], str, c.Arguments...)
	}); err != nil {
		return err
	}
	for _, name := range []string{"padStart", "padEnd"} {
		orig := fns[name]
		if err := set(proto, name, func(c goja.FunctionCall) goja.Value {
			if c.Argument(0).ToInteger() > s.maxStr {
				s.throwRangef("String.prototype.%s: the result would be more than %d characters", name, s.maxStr)
			}
			return call(orig, c.This, c.Arguments...)
		}); err != nil {
			return err
		}
	}
	if err := set(proto, "concat", func(c goja.FunctionCall) goja.Value {
		b := budget{s: s, max: s.maxStr, what: "String.prototype.concat"}
		first := c.This.String()
		b.add(int64(len(first)))
		var sb strings.Builder
		sb.WriteString(first)
		for _, a := range c.Arguments {
			str := a.String()
			b.add(int64(len(str)))
			sb.WriteString(str)
		}
		return rt.ToValue(sb.String())
	}); err != nil {
		return err
	}
	for _, name := range []string{"replace", "replaceAll"} {
		orig := fns[name]
		if err := set(proto, name, func(c goja.FunctionCall) goja.Value {
			str := c.This.ToString()
			b := &budget{s: s, max: s.maxStr, used: s.lengthOf(str), what: "String.prototype." + name}
			return call(orig, str, c.Argument(0), s.budgetedReplacer(c.Argument(1), b))
		}); err != nil {
			return err
		}
	}
	if err := set(proto, "split", func(c goja.FunctionCall) goja.Value {
		limit := c.Argument(1)
		capped := s.maxLen + 1
		if n := limit.ToInteger(); !goja.IsUndefined(limit) && n >= 0 && n <= capped {
			return call(fns["split"], c.This, c.Arguments...)
		}
		res := call(fns["split"], c.This, c.Argument(0), rt.ToValue(capped))
		if s.lengthOf(res) >= capped {
			s.throwRangef("String.prototype.split: more than %d pieces", s.maxLen)
		}
		return res
	}); err != nil {
		return err
	}
	iter := proto.GetSymbol(goja.SymIterator)
	origIter, ok := goja.AssertFunction(iter)
	if !ok {
		return wrapGuard("String.prototype[Symbol.iterator]", errNotFunction)
	}
	guarded := rt.ToValue(func(c goja.FunctionCall) goja.Value {
		s.checkLen("String.prototype[Symbol.iterator]", c.This)
		return call(origIter, c.This, c.Arguments...)
	})
	if err := proto.DefineDataPropertySymbol(goja.SymIterator, guarded, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE); err != nil {
		return wrapGuard("String.prototype[Symbol.iterator]", err)
	}
	return nil
}

// budgetedReplacer turns replace's second argument into a function that
// counts what each replacement adds, so a replacement (or a $` pattern)
// repeated a million times cannot build a string past the budget in one
// call.
func (s *sandbox) budgetedReplacer(repl goja.Value, b *budget) goja.Value { //nolint:ireturn // goja values are an interface
	rt := s.rt
	if fn, ok := goja.AssertFunction(repl); ok {
		return rt.ToValue(func(fc goja.FunctionCall) goja.Value {
			r := call(fn, fc.This, fc.Arguments...).ToString()
			b.add(s.lengthOf(r))
			return r
		})
	}
	replStr := repl.ToString()
	template := replStr.String()
	if !strings.Contains(template, "$") {
		n := s.lengthOf(replStr)
		return rt.ToValue(func(goja.FunctionCall) goja.Value {
			b.add(n)
			return replStr
		})
	}
	return rt.ToValue(func(fc goja.FunctionCall) goja.Value {
		r := rt.ToValue(substitute(template, fc.Arguments))
		b.add(s.lengthOf(r))
		return r
	})
}

// substitute expands a replacement template (ECMAScript GetSubstitution) for
// one match; args are what replace passes a replacer function: the match,
// the captures, the position, the string and, with named groups, the groups.
func substitute(template string, args []goja.Value) string {
	if len(args) < 3 {
		return template
	}
	var groups *goja.Object
	if g, ok := args[len(args)-1].(*goja.Object); ok {
		groups, args = g, args[:len(args)-1]
	}
	match := args[0].String()
	str, _ := args[len(args)-1].(goja.String)
	pos := int(args[len(args)-2].ToInteger())
	captures := args[1 : len(args)-2]
	var sb strings.Builder
	for i := 0; i < len(template); i++ {
		c := template[i]
		if c != '$' || i+1 == len(template) {
			sb.WriteByte(c)
			continue
		}
		next := template[i+1]
		switch {
		case next == '$':
			sb.WriteByte('$')
			i++
		case next == '&':
			sb.WriteString(match)
			i++
		case next == '`' && str != nil:
			sb.WriteString(str.Substring(0, min(pos, str.Length())).String())
			i++
		case next == '\'' && str != nil:
			end := pos
			if m, ok := args[0].(goja.String); ok {
				end += m.Length()
			}
			end = min(end, str.Length())
			sb.WriteString(str.Substring(end, str.Length()).String())
			i++
		case next >= '0' && next <= '9':
			n, width := int(next-'0'), 1
			if i+2 < len(template) && template[i+2] >= '0' && template[i+2] <= '9' {
				if two := n*10 + int(template[i+2]-'0'); two >= 1 && two <= len(captures) {
					n, width = two, 2
				}
			}
			if n < 1 || n > len(captures) {
				sb.WriteByte('$')
				continue
			}
			if v := captures[n-1]; v != nil && !goja.IsUndefined(v) {
				sb.WriteString(v.String())
			}
			i += width
		case next == '<' && groups != nil:
			end := strings.IndexByte(template[i+2:], '>')
			if end < 0 {
				sb.WriteByte('$')
				continue
			}
			if v := groups.Get(template[i+2 : i+2+end]); v != nil && !goja.IsUndefined(v) {
				sb.WriteString(v.String())
			}
			i += end + 2
		default:
			sb.WriteByte('$')
		}
	}
	return sb.String()
}
