package mongostore

import (
	"maps"
	"slices"
)

// keyValueDoc is one entry of a string map as stored.
type keyValueDoc struct {
	Key   string `bson:"key"`
	Value string `bson:"value"`
}

// toKeyValues stores a map whose keys come from users (HTTP header names) as
// a list sorted by key: a key with "." or a leading "$" is refused as a field
// name by FerretDB and by older MongoDB servers. nil stays nil and empty
// stays empty.
func toKeyValues(m map[string]string) []keyValueDoc {
	if m == nil {
		return nil
	}
	out := make([]keyValueDoc, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, keyValueDoc{Key: k, Value: m[k]})
	}
	return out
}

// fromKeyValues is the inverse of toKeyValues.
func fromKeyValues(kvs []keyValueDoc) map[string]string {
	if kvs == nil {
		return nil
	}
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}
