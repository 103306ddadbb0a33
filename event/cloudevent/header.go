package cloudevent

// HeaderValue encodes an attribute value for a ce-* header of the
// CloudEvents HTTP binding (binary mode, section 3.1.3.2): a space, a
// double quote, a percent sign and every byte outside the printable ASCII
// range U+0021–U+007E are percent-encoded (%XX, upper-case hex, byte by
// byte of the UTF-8). A receiver decodes it as the gateway's own ingest
// does (url.PathUnescape). A value that needs no encoding is returned as
// it is, without allocating.
func HeaderValue(v string) string {
	n := 0
	for i := range len(v) {
		if headerEscaped(v[i]) {
			n++
		}
	}
	if n == 0 {
		return v
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len(v)+2*n)
	for i := range len(v) {
		c := v[i]
		if headerEscaped(c) {
			b = append(b, '%', hex[c>>4], hex[c&0xf])
			continue
		}
		b = append(b, c)
	}
	return string(b)
}

// headerEscaped reports whether c is percent-encoded in a ce-* header.
func headerEscaped(c byte) bool {
	return c <= ' ' || c >= 0x7f || c == '"' || c == '%'
}
