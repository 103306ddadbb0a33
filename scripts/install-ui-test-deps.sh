#!/usr/bin/env bash
# Installs the pinned Node dependencies of the dashboard's browser tests
# (api/ui/e2e: playwright-core, exactly as package-lock.json says) with `npm ci`.
# It never downloads a browser: the tests drive Debian's Chromium, which
# scripts/install-chromium.sh installs. Idempotent and fast: does nothing
# when node_modules already matches the lock file.
set -euo pipefail
cd "$(dirname "$0")/../api/ui/e2e"

if ! command -v npm >/dev/null 2>&1; then
	echo "install-ui-test-deps: npm not found; install Node.js (apt-get install nodejs npm) for the dashboard's browser tests" >&2
	exit 1
fi
lock="require('./package-lock.json').packages['node_modules/playwright-core'].version"
want=$(node -p "$lock")
have=$(node -p "require('./node_modules/playwright-core/package.json').version" 2>/dev/null || true)
if [ "$want" = "$have" ]; then
	exit 0
fi
# PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: playwright-core downloads nothing, but
# say so in case a later version grows an install hook.
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error
