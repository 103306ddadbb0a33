#!/usr/bin/env bash
# The layout's import rules (STYLE.md §1, §4–7) checked with `go list` on the
# production code (tests excluded), as a second line behind depguard
# (.golangci.yaml), which checks each file's own imports. Keep the two in step.
#
# Direct imports (the same rules as depguard's, without needing the linter):
#   gin              only api
#   mongo-driver     only storage/mongostore
#   sqlite           only storage/sqlitestore
#   pebble           only storage/pebblestore
#   aws-sdk-go-v2    only queue/sqsqueue
# Dependencies, followed transitively (what depguard cannot see: a domain
# package reaching an adapter or the HTTP layer through a helper package):
#   an adapter (storage/mongostore, storage/sqlitestore, storage/pebblestore,
#   storage/embedded, queue/memqueue, queue/sqsqueue)
#                    only cmd/hooklane, which wires them, pipelinetest, the
#                    test helper that assembles the embedded pipeline, and
#                    storage/embedded, which puts the two embedded planes
#                    together
#   api              only cmd/hooklane
set -euo pipefail
cd "$(dirname "$0")/.."

mod=github.com/hooklane/hooklane
imports=$(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
deps=$(go list -f '{{.ImportPath}} {{join .Deps " "}}' ./...)
fail=0

# check NAME GRAPH DEP_REGEX ALLOWED_PACKAGE_REGEX
check() {
	local name="$1" graph="$2" dep="$3" allowed="$4" pkg list bad
	while read -r pkg list; do
		if grep -Eq "^($allowed)$" <<<"$pkg"; then
			continue
		fi
		bad=$(tr ' ' '\n' <<<"$list" | grep -E "^($dep)(/|$)" | head -1 || true)
		if [ -n "$bad" ]; then
			echo "import rule ($name): $pkg must not depend on $bad"
			fail=1
		fi
	done <<<"$graph"
}

check gin "$imports" 'github.com/gin-gonic/gin|github.com/gin-contrib' "$mod/api"
check mongo "$imports" 'go.mongodb.org/mongo-driver' "$mod/storage/mongostore"
check sqlite "$imports" 'modernc.org/sqlite' "$mod/storage/sqlitestore"
check pebble "$imports" 'github.com/cockroachdb/pebble' "$mod/storage/pebblestore"
check aws "$imports" 'github.com/aws/aws-sdk-go-v2|github.com/aws/smithy-go' "$mod/queue/sqsqueue|$mod/destination/sqs"
check adapter "$deps" "$mod/storage/(mongostore|sqlitestore|pebblestore|embedded)|$mod/queue/(memqueue|sqsqueue)" "$mod/cmd/hooklane|$mod/storage/pipelinetest|$mod/storage/embedded"
check api "$deps" "$mod/api" "$mod/cmd/hooklane(/.*)?|$mod/api(/.*)?"
# The layers of the top-level folders (README "Layout"), lowest first: a
# package may import its own folder and the folders below it, never one
# above (an import running back up), so the folders read as a stack.
layers=(store queue destination event stream dispatch subscription tenant ingest router storage api cmd)
rank() {
	local i
	for i in "${!layers[@]}"; do
		if [ "${layers[$i]}" = "$1" ]; then
			echo "$i"
			return
		fi
	done
	echo -1
}
while read -r pkg list; do
	top=${pkg#"$mod"/}
	top=${top%%/*}
	pr=$(rank "$top")
	if [ "$pr" -lt 0 ]; then
		case "$top" in localstack | deploy | scripts) continue ;; esac
		echo "import rule (layers): $pkg is in a top-level folder with no layer: add it to layers in scripts/check-imports.sh and to README Layout"
		fail=1
		continue
	fi
	for dep in $list; do
		case "$dep" in "$mod"/*) ;; *) continue ;; esac
		dtop=${dep#"$mod"/}
		dtop=${dtop%%/*}
		dr=$(rank "$dtop")
		if [ "$dr" -gt "$pr" ]; then
			echo "import rule (layers): $pkg ($top) must not import $dep ($dtop is a higher layer)"
			fail=1
		fi
	done
done <<<"$imports"
exit $fail
