package sqsqueue

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// GroupAttribute is the message attribute that carries a Group SQS cannot
// take as a MessageGroupId (see the package documentation).
const GroupAttribute = "Hooklane.Group"

// EncodingAttribute is the message attribute set to "base64" when the body
// was not text SQS accepts and travels base64-encoded instead.
const EncodingAttribute = "Hooklane.Encoding"

// maxIDLen is the longest MessageGroupId or MessageDeduplicationId SQS
// accepts.
const maxIDLen = 128

// hashedIDPrefix marks an id replaced by its SHA-256. An id that is already
// valid is never hashed, and a valid id cannot collide with a hashed one in
// practice (it would have to be this prefix plus a SHA-256 preimage).
const hashedIDPrefix = "sha256:"

// validID reports whether s is a valid SQS MessageGroupId or
// MessageDeduplicationId: 1 to 128 characters, each alphanumeric or
// punctuation, i.e. printable ASCII without the space (0x21-0x7E).
func validID(s string) bool {
	if s == "" || len(s) > maxIDLen {
		return false
	}
	for i := range len(s) {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// sqsID returns s when SQS accepts it as an id, else a stable valid
// replacement: hashedIDPrefix followed by the hex SHA-256 of s (71 chars).
func sqsID(s string) string {
	if validID(s) {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return hashedIDPrefix + hex.EncodeToString(sum[:])
}

// dedupID returns the MessageDeduplicationId for a DedupID.
func (q *Queue) dedupID(ctx context.Context, id string) string {
	out := sqsID(id)
	if out != id {
		q.logger.DebugContext(ctx, "dedup id hashed for sqs", "dedup_id", id, "sqs_dedup_id", out)
	}
	return out
}

// groupID returns the MessageGroupId for a Group and, when the group had to
// be hashed, the message attributes that carry the original.
func (q *Queue) groupID(ctx context.Context, group string) (string, map[string]types.MessageAttributeValue) {
	out := sqsID(group)
	if out == group {
		return group, nil
	}
	q.logger.DebugContext(ctx, "message group hashed for sqs", "group", group, "sqs_group", out)
	return out, map[string]types.MessageAttributeValue{
		GroupAttribute: {DataType: aws.String("String"), StringValue: aws.String(group)},
	}
}

// validBody reports whether SQS accepts b as a message body as it is: UTF-8
// of the characters #x9 #xA #xD #x20-#xD7FF #xE000-#xFFFD. SQS also takes
// #x10000 and up, but fauxqs (the local test server) does not, so those
// bodies are encoded too.
func validBody(b []byte) bool {
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r == utf8.RuneError && size <= 1:
			return false
		case r == 0x9 || r == 0xa || r == 0xd:
		case r < 0x20, r >= 0xd800 && r < 0xe000, r > 0xfffd:
			return false
		}
		b = b[size:]
	}
	return true
}

// encodeBody returns the SQS message body for b, base64-encoding b (and
// setting EncodingAttribute in attrs, which it may allocate) when SQS would
// refuse it as it is.
func encodeBody(b []byte, attrs map[string]types.MessageAttributeValue) (string, map[string]types.MessageAttributeValue) {
	if validBody(b) {
		return string(b), attrs
	}
	if attrs == nil {
		attrs = make(map[string]types.MessageAttributeValue, 1)
	}
	attrs[EncodingAttribute] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String("base64")}
	return base64.StdEncoding.EncodeToString(b), attrs
}

// decodeBody reverses encodeBody.
func decodeBody(body string, attrs map[string]types.MessageAttributeValue) ([]byte, error) {
	a, ok := attrs[EncodingAttribute]
	if !ok {
		return []byte(body), nil
	}
	if enc := aws.ToString(a.StringValue); enc != "base64" {
		return nil, fmt.Errorf("decode body: unknown %s %q", EncodingAttribute, enc)
	}
	b, err := base64.StdEncoding.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	return b, nil
}

// encodeAttributes adds the caller's attributes to the SQS message
// attributes attrs (which it may allocate) as String values.
func encodeAttributes(user map[string]string, attrs map[string]types.MessageAttributeValue) map[string]types.MessageAttributeValue {
	if len(user) == 0 {
		return attrs
	}
	if attrs == nil {
		attrs = make(map[string]types.MessageAttributeValue, len(user))
	}
	for k, v := range user {
		attrs[k] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(v)}
	}
	return attrs
}

// decodeAttributes returns the caller's attributes among a received
// message's SQS attributes: every String one except the adapter's own.
func decodeAttributes(attrs map[string]types.MessageAttributeValue) map[string]string {
	var out map[string]string
	for k, a := range attrs {
		if k == GroupAttribute || k == EncodingAttribute || a.StringValue == nil {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(attrs))
		}
		out[k] = *a.StringValue
	}
	return out
}
