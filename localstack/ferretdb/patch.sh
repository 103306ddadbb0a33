#!/usr/bin/env bash
# patch.sh OUT_DIR — makes a patched copy of the FerretDB module that go.mod
# pins (OUT_DIR/src, from the module cache) and a go.mod/go.sum pair
# (OUT_DIR/go.mod, OUT_DIR/go.sum) that builds this directory's main
# against it:
#
#	go build -modfile OUT_DIR/go.mod .
#
# The committed go.mod stays the plain upstream one.
#
# Why: FerretDB v1.24.0's SQLite backend reads whole tables for almost every
# query, so the test server's cost per request grows with the data (the
# multi-instance test of 5,000 events fell below one delivery a second),
# where MongoDB would use the indexes Hooklane creates. Two patches:
#
#  1. Lookups by _id use the _id index. FerretDB selects by the expression
#     _ferretdb_sjson->'$._id'  while the unique index it creates on every
#     collection is on  _ferretdb_sjson->"_id";  SQLite uses an expression
#     index only for the identical expression, so every find, update and
#     delete by _id scanned the table (~11 µs per stored document, 47 ms a
#     lookup at 4,000 jobs). Both select the same value: results are
#     unchanged.
#  2. Equality on top-level fields is pushed down to SQL. Upstream pushes
#     down only a filter that is exactly {_id: value}; the patched backend
#     also turns up to three top-level {field: "string"} terms of a filter
#     into SQL on the expressions of the indexes FerretDB creates
#     (_ferretdb_sjson->"field"), so SQLite searches an index where one
#     exists (jobs by subscriptionId + messageGroup, by status, ...).
#     FerretDB still applies the whole filter to what SQL returns, so SQL
#     only has to return a superset — including MongoDB's rule that
#     {f: "x"} also matches a document whose f is an array containing "x":
#     each field matches either the value or any array, written as a union
#     of index searches (field = '"x"', or field in the range of JSON texts
#     that start with '[').
#
# Each patch replaces a fixed string that must occur exactly once; the
# script fails if FerretDB's source no longer has it (a new version may
# have fixed it, or moved it).
set -euo pipefail

out="${1:?usage: patch.sh OUT_DIR}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
mod_dir="$(cd "$here" && GOFLAGS=-mod=readonly go list -m -f '{{.Dir}}' github.com/FerretDB/FerretDB)"
[[ -n "$mod_dir" && -d "$mod_dir" ]] || {
	echo "patch.sh: FerretDB is not in the module cache (go mod download)" >&2
	exit 1
}
rm -rf "$out"
mkdir -p "$out"
cp -R "$mod_dir" "$out/src"
chmod -R u+w "$out/src"

# replace RELATIVE_PATH FROM TO — replaces the one occurrence of FROM.
replace() {
	local file="$out/src/$1" from="$2" to="$3" n
	n="$(grep -cF -- "$from" "$file" || true)"
	if [[ "$n" != 1 ]]; then
		echo "patch.sh: expected one line with '$from' in $1, found $n" >&2
		exit 1
	fi
	awk -v from="$from" -v to="$to" \
		'{ i = index($0, from); if (i) { $0 = substr($0, 1, i-1) to substr($0, i+length(from)) } print }' \
		"$file" >"$file.patched"
	mv "$file.patched" "$file"
}

replace internal/backends/sqlite/metadata/metadata.go \
	'IDColumn = DefaultColumn + "->'"'"'$._id'"'"'"' \
	'IDColumn = DefaultColumn + `->"_id"`'

replace internal/backends/sqlite/collection.go \
	'	q += whereClause' \
	'	if whereClause == "" { whereClause, args = hooklaneEqualityPushdown(params.Filter) }; q += whereClause'
cat >"$out/src/internal/backends/sqlite/hooklane_pushdown.go" <<'GO'
package sqlite

// This file is not part of FerretDB: Hooklane's localstack/ferretdb/patch.sh
// adds it (see there).

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/FerretDB/FerretDB/internal/backends/sqlite/metadata"
	"github.com/FerretDB/FerretDB/internal/handler/sjson"
	"github.com/FerretDB/FerretDB/internal/types"
)

// hooklanePlainField matches the field names pushed down: no operator, no
// path, nothing that needs quoting beyond the index expression's.
var hooklanePlainField = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// hooklaneMaxFields bounds the fields pushed down: the clause is a union of
// 2^n index searches.
const hooklaneMaxFields = 3

// hooklaneEqualityPushdown returns a WHERE clause and its arguments that
// select a superset of the documents whose top-level fields equal the
// filter's plain string values; "" when the filter has no such field.
//
// For each field f with value v a document qualifies when f's JSON text is
// v's, or when f holds an array (MongoDB's {f: v} matches arrays containing
// v; FerretDB's own filter then decides). Written as a union of
// conjunctions, every branch of which SQLite can answer with an index on
// one of the fields:
//
//	(f1 = v1 AND f2 = v2) OR (f1 = v1 AND f2 is array) OR ...
func hooklaneEqualityPushdown(filter *types.Document) (string, []any) {
	if filter == nil {
		return "", nil
	}
	var cols, vals []string
	for _, k := range filter.Keys() {
		if len(cols) == hooklaneMaxFields {
			break
		}
		if !hooklanePlainField.MatchString(k) {
			continue
		}
		v, err := filter.Get(k)
		if err != nil {
			continue
		}
		s, ok := v.(string)
		if !ok {
			continue
		}
		b, err := sjson.MarshalSingleValue(s)
		if err != nil {
			continue
		}
		cols = append(cols, fmt.Sprintf(`%s->%q`, metadata.DefaultColumn, k))
		vals = append(vals, string(b))
	}
	if len(cols) == 0 {
		return "", nil
	}
	var branches []string
	var args []any
	for mask := 0; mask < 1<<len(cols); mask++ {
		terms := make([]string, len(cols))
		for i, col := range cols {
			if mask&(1<<i) == 0 {
				terms[i] = col + " = ?"
				args = append(args, vals[i])
			} else {
				terms[i] = "(" + col + ` >= '[' AND ` + col + ` < '\')`
			}
		}
		branches = append(branches, "("+strings.Join(terms, " AND ")+")")
	}
	return " WHERE " + strings.Join(branches, " OR "), args
}
GO

cp "$here/go.mod" "$out/go.mod"
cp "$here/go.sum" "$out/go.sum"
printf '\nreplace github.com/FerretDB/FerretDB => %s\n' "$out/src" >>"$out/go.mod"
