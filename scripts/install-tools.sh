#!/usr/bin/env bash
# Builds the pinned developer tools (today: golangci-lint) from the Go module
# proxy into scripts/tools/bin and prints the path of the binary asked for. The pins
# live in scripts/tools/go.mod (a module of its own, so the product's go.mod stays
# clean); bump one with
#   cd scripts/tools && go get -tool github.com/golangci/golangci-lint/v2/cmd/golangci-lint@vX.Y.Z && go mod tidy
# Idempotent: the binary's name carries its version, and an existing one is
# reused. A cold build (empty module and build caches) takes ~2.5 CPU-minutes:
# 6 min wall on a loaded 2-core machine.
#
#   bash scripts/install-tools.sh golangci-lint   # → scripts/tools/bin/golangci-lint-v2.15.0
set -euo pipefail
cd "$(dirname "$0")/tools"

tool="${1:-golangci-lint}"
case "$tool" in
golangci-lint)
	module=github.com/golangci/golangci-lint/v2
	pkg=$module/cmd/golangci-lint
	;;
*)
	echo "install-tools: unknown tool $tool (known: golangci-lint)" >&2
	exit 2
	;;
esac

version=$(GOFLAGS=-mod=readonly go list -m -f '{{.Version}}' "$module")
bin="$PWD/bin/$tool-$version"
if [ ! -x "$bin" ]; then
	echo "install-tools: building $tool $version with $(go env GOVERSION) (first run only)" >&2
	# Build into a temporary name and rename, so an interrupted build never
	# leaves a binary that a later run would trust.
	GOFLAGS=-mod=readonly go build -o "$bin.tmp" "$pkg"
	mv "$bin.tmp" "$bin"
fi
echo "$bin"
