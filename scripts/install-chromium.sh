#!/usr/bin/env bash
# Installs Debian's headless-capable Chromium for the browser test of the
# status stream (cmd/hooklane: an EventSource in a real browser). Idempotent:
# does nothing when a chromium binary is already on PATH. Needs root (or
# sudo) and apt; elsewhere it says so and exits 0, and the browser test fails
# with a message naming this script.
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
	echo "install-chromium: apt-get not found; install Chromium by hand for the browser test" >&2
	exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
	if ! command -v sudo >/dev/null 2>&1; then
		echo "install-chromium: not root and no sudo; install the chromium package by hand" >&2
		exit 0
	fi
	sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium
