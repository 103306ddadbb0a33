# Hooklane developer commands. `make help` lists them.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
# The HTTP contract kept beside the repository (../shared/API.md), when it
# is there: the chart check accepts the HOOKLANE_* names its §9 defines.
CONTRACT := $(wildcard ../shared/API.md)

.PHONY: help run build test test/race test/unit bench fmt vet verify tidy stack/start stack/stop

help: ## Show this help
	@grep -E '^[a-zA-Z/_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

run: ## Run the gateway on the embedded default (SQLite + in-process queue)
	$(GO) run ./cmd/hooklane serve

build: ## Build bin/hooklane
	$(GO) build -o bin/hooklane ./cmd/hooklane

test: ## Run the whole suite as CI does: Chromium (browser test), local stack, vet, gofmt, race tests, every benchmark once
	@set -euo pipefail; \
	bash scripts/install-chromium.sh; \
	bash scripts/install-ui-test-deps.sh; \
	bash localstack/stack.sh start; \
	trap 'bash localstack/stack.sh stop' EXIT; \
	eval "$$(bash localstack/stack.sh env)"; \
	$(MAKE) --no-print-directory verify; \
	$(GO) test -race -count=1 -timeout 40m $(PKGS); \
	$(GO) run ./cmd/hooklane bench --short; \
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 20m $(PKGS)

test/race: ## Race-enabled tests only (expects the local stack: make stack/start)
	$(GO) test -race -count=1 $(PKGS)

test/unit: ## Tests that need no local stack (embedded store and queue)
	$(GO) test -race -count=1 $$($(GO) list $(PKGS) | grep -v -e mongostore -e sqsqueue -e localstack)

bench: ## Run the Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fmt: ## Format the code
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet
	$(GO) vet $(PKGS)

verify: vet ## vet, gofmt, import rules, docker-compose.yml and Dockerfile validity, the Helm chart and Grafana dashboard
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@bash scripts/check-imports.sh
	@cd localstack/composecheck && GOFLAGS=-mod=readonly $(GO) run . ../../docker-compose.yml
	@cd deploy/chartcheck && GOFLAGS=-mod=readonly $(GO) run . -chart ../helm/hooklane -readme ../../README.md -dashboard ../grafana/hooklane.json $(if $(CONTRACT),-contract ../../$(CONTRACT))

tidy: ## go mod tidy
	$(GO) mod tidy

stack/start: ## Start the local test stack (SQS- and MongoDB-compatible servers on loopback)
	bash localstack/stack.sh start

stack/stop: ## Stop the local test stack
	bash localstack/stack.sh stop
