package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// Sign returns the webhook-signature header value for one delivery: one
// "v1,<base64 HMAC-SHA256>" per key, space separated, over
// "{id}.{timestamp}.{body}" (Standard Webhooks).
func Sign(keys [][]byte, id string, ts time.Time, body []byte) string {
	var b strings.Builder
	unix := strconv.FormatInt(ts.Unix(), 10)
	for i, key := range keys {
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id))
		mac.Write([]byte{'.'})
		mac.Write([]byte(unix))
		mac.Write([]byte{'.'})
		mac.Write(body)
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	return b.String()
}
