package queue

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxAttributes is the most attributes one message may carry. SQS allows
// ten per message; adapters keep the rest for their own bookkeeping.
const MaxAttributes = 8

// MaxAttributeNameLen is the longest attribute name accepted.
const MaxAttributeNameLen = 64

// MaxAttributeValueLen is the longest attribute value accepted, in bytes.
const MaxAttributeValueLen = 1024

// CheckAttributes reports whether attrs may be sent as a message's
// Attributes: at most MaxAttributes entries; each name 1 to
// MaxAttributeNameLen characters of ASCII letters, digits, '_', '-' and
// '.', not starting or ending with '.', without "..", and not starting with
// a reserved prefix ("AWS.", "Amazon.", "Hooklane.", in any case); each
// value 1 to MaxAttributeValueLen bytes of UTF-8 text without control
// characters other than tab. These are the rules of an SQS String message
// attribute, narrowed so that every adapter can carry any valid set.
func CheckAttributes(attrs map[string]string) error {
	if len(attrs) > MaxAttributes {
		return fmt.Errorf("%d attributes, more than %d", len(attrs), MaxAttributes)
	}
	var errs []error
	for name, value := range attrs {
		if err := checkAttributeName(name); err != nil {
			errs = append(errs, err)
		}
		if err := checkAttributeValue(value); err != nil {
			errs = append(errs, fmt.Errorf("attribute %q: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// checkAttributeName checks one attribute name.
func checkAttributeName(name string) error {
	if name == "" || len(name) > MaxAttributeNameLen {
		return fmt.Errorf("attribute name %q: length outside 1..%d", name, MaxAttributeNameLen)
	}
	for i := range len(name) {
		c := name[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			return fmt.Errorf("attribute name %q: character %q not allowed", name, c)
		}
	}
	if name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return fmt.Errorf("attribute name %q: misplaced '.'", name)
	}
	// These prefixes belong to SQS ("AWS.", "Amazon.") or to the adapters
	// ("Hooklane."), in any case.
	lower := strings.ToLower(name)
	if strings.HasPrefix(lower, "aws.") || strings.HasPrefix(lower, "amazon.") || strings.HasPrefix(lower, "hooklane.") {
		return fmt.Errorf("attribute name %q: reserved prefix", name)
	}
	return nil
}

// checkAttributeValue checks one attribute value.
func checkAttributeValue(v string) error {
	if v == "" || len(v) > MaxAttributeValueLen {
		return fmt.Errorf("value length %d outside 1..%d", len(v), MaxAttributeValueLen)
	}
	if !utf8.ValidString(v) {
		return errors.New("value is not UTF-8")
	}
	for _, r := range v {
		if r < 0x20 && r != '\t' || r == 0x7f || r >= 0xfffe {
			return fmt.Errorf("value has character %U", r)
		}
	}
	return nil
}
