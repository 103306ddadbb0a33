package subscription

import "math"

// decimal is a JSON number held exactly, without rounding to float64, so
// that filters compare 12345678901234567890 and 12345678901234567891 as
// different and 1, 1.0 and 1e0 as equal.
//
// The value is sign × 0.D × 10^exp, where D is the concatenation hi+lo (two
// substrings of the source text, so parsing does not allocate), with no
// leading and no trailing zero. Zero has D empty. Exponents saturate at
// ±2^62, far beyond any number a real event carries.
type decimal struct {
	neg    bool
	hi, lo string
	exp    int64
}

const expLimit = int64(1) << 62

// parseDecimal parses s by the JSON number grammar
// (-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?); a leading '+' or extra
// leading zeros are also accepted (strconv.FormatFloat writes "1e+21"). ok
// is false when s is not a number.
func parseDecimal(s string) (d decimal, ok bool) {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		d.neg = s[i] == '-'
		i++
	}
	start := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	intPart := s[start:i]
	if intPart == "" {
		return decimal{}, false
	}
	var frac string
	if i < len(s) && s[i] == '.' {
		i++
		fs := i
		for i < len(s) && isDigit(s[i]) {
			i++
		}
		frac = s[fs:i]
		if frac == "" {
			return decimal{}, false
		}
	}
	var e int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		eneg := false
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			eneg = s[i] == '-'
			i++
		}
		es := i
		for i < len(s) && isDigit(s[i]) {
			if e <= expLimit/10 {
				e = e*10 + int64(s[i]-'0')
			} else {
				e = expLimit
			}
			i++
		}
		if es == i {
			return decimal{}, false
		}
		e = min(e, expLimit)
		if eneg {
			e = -e
		}
	}
	if i != len(s) {
		return decimal{}, false
	}
	d.exp = int64(len(intPart)) + e
	// Leading zeros: each one removed shifts the point right.
	for intPart != "" && intPart[0] == '0' {
		intPart = intPart[1:]
		d.exp--
	}
	if intPart == "" {
		for frac != "" && frac[0] == '0' {
			frac = frac[1:]
			d.exp--
		}
	}
	// Trailing zeros do not change the value.
	for frac != "" && frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	if frac == "" {
		for intPart != "" && intPart[len(intPart)-1] == '0' {
			intPart = intPart[:len(intPart)-1]
		}
	}
	d.hi, d.lo = intPart, frac
	if d.hi == "" && d.lo == "" {
		return decimal{}, true // zero, of either sign
	}
	d.exp = max(min(d.exp, expLimit), -expLimit)
	return d, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (d decimal) isZero() bool { return d.hi == "" && d.lo == "" }

func (d decimal) sign() int {
	switch {
	case d.isZero():
		return 0
	case d.neg:
		return -1
	default:
		return 1
	}
}

func (d decimal) digits() int { return len(d.hi) + len(d.lo) }

func (d decimal) digit(i int) byte {
	if i < len(d.hi) {
		return d.hi[i]
	}
	return d.lo[i-len(d.hi)]
}

// cmp returns -1, 0 or +1 as d is less than, equal to or greater than o.
func (d decimal) cmp(o decimal) int {
	ds, dt := d.sign(), o.sign()
	if ds != dt || ds == 0 {
		return cmpInt(ds, dt)
	}
	c := d.cmpAbs(o)
	if ds < 0 {
		return -c
	}
	return c
}

// cmpAbs compares magnitudes of two non-zero decimals.
func (d decimal) cmpAbs(o decimal) int {
	if d.exp != o.exp {
		if d.exp < o.exp {
			return -1
		}
		return 1
	}
	n, m := d.digits(), o.digits()
	for i := range min(n, m) {
		if a, b := d.digit(i), o.digit(i); a != b {
			return cmpInt(int(a), int(b))
		}
	}
	// Equal prefix: without trailing zeros, more digits means larger.
	return cmpInt(n, m)
}

func cmpInt(a, b int) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	default:
		return 0
	}
}

// floatOK reports whether f is finite: NaN and the infinities are not JSON
// numbers.
func floatOK(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
