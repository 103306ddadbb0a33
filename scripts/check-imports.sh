#!/usr/bin/env bash
# Enforces the layering of STYLE.md: only api imports gin; only the store
# adapters import mongo-driver or sqlite; only the queue adapters import the
# AWS SDK; domain packages import no adapter.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
check() { # check PATTERN ALLOWED_PACKAGE_REGEX
	local pattern="$1" allowed="$2" pkg
	while read -r pkg deps; do
		if grep -q -- "$pattern" <<<"$deps" && ! grep -Eq "$allowed" <<<"$pkg"; then
			echo "import rule: $pkg must not import $pattern"
			fail=1
		fi
	done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
}
check 'github.com/gin-gonic/gin' '^github.com/hooklane/hooklane/api$'
check 'go.mongodb.org/mongo-driver' '^github.com/hooklane/hooklane/store/mongostore$'
check 'modernc.org/sqlite' '^github.com/hooklane/hooklane/store/sqlitestore$'
check 'github.com/aws/aws-sdk-go-v2' '^github.com/hooklane/hooklane/queue/sqsqueue$'
domain='^github.com/hooklane/hooklane/(cloudevent|dispatch|ingest|schema|subscription|stream|router|pollers|idgen|api)$'
while read -r pkg deps; do
	if grep -Eq "$domain" <<<"$pkg" && grep -Eq 'hooklane/(store/(mongostore|sqlitestore)|queue/(memqueue|sqsqueue))( |$)' <<<"$deps"; then
		echo "import rule: domain package $pkg must not import an adapter"
		fail=1
	fi
done < <(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
exit $fail
