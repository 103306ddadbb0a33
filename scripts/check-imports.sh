#!/usr/bin/env bash
# The layout's import rules (STYLE.md §1, §4–7) checked with `go list` on the
# production code (tests excluded), as a second line behind depguard
# (.golangci.yaml), which checks each file's own imports. Keep the two in step.
#
# Direct imports (the same rules as depguard's, without needing the linter):
#   gin              only api
#   mongo-driver     only store/mongostore
#   sqlite           only store/sqlitestore
#   aws-sdk-go-v2    only queue/sqsqueue
# Dependencies, followed transitively (what depguard cannot see: a domain
# package reaching an adapter or the HTTP layer through a helper package):
#   an adapter (store/mongostore, store/sqlitestore, queue/memqueue,
#   queue/sqsqueue)  only cmd/hooklane, which wires them, and pipelinetest,
#                    the test helper that assembles the embedded pipeline
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
check mongo "$imports" 'go.mongodb.org/mongo-driver' "$mod/store/mongostore"
check sqlite "$imports" 'modernc.org/sqlite' "$mod/store/sqlitestore"
check aws "$imports" 'github.com/aws/aws-sdk-go-v2|github.com/aws/smithy-go' "$mod/queue/sqsqueue"
check adapter "$deps" "$mod/store/(mongostore|sqlitestore)|$mod/queue/(memqueue|sqsqueue)" "$mod/cmd/hooklane|$mod/pipelinetest"
check api "$deps" "$mod/api" "$mod/cmd/hooklane"
exit $fail
