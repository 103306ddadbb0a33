# Hooklane developer commands. `make help` lists them.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
# The HTTP contract kept beside the repository (../shared/API.md), when it
# is there: the chart check accepts the HOOKLANE_* names its §9 defines.
CONTRACT := $(wildcard ../shared/API.md)

.PHONY: help run build test test/race test/unit bench fmt vet lint tools verify tidy tidy/check stack/start stack/stop

help: ## Show this help
	@grep -E '^[a-zA-Z/_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-14s %s\n", $$1, $$2}'

run: ## Run the gateway on the embedded default (SQLite + in-process queue)
	$(GO) run ./cmd/hooklane serve

build: ## Build bin/hooklane
	$(GO) build -o bin/hooklane ./cmd/hooklane

test: ## Run the whole suite as CI does: Chromium (browser test), local stack, verify (vet, lint, tidy, import rules), race tests, every benchmark once
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
	$(GO) test -race -count=1 $$($(GO) list $(PKGS) | grep -v -e mongostore -e sqsqueue -e localstack -e destination/sqs -e destination/rabbitmq)

bench: ## Run the Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem $(PKGS)

fmt: ## Format the code: gofumpt, gci (std / third-party / hooklane), goimports
	@lint=$$(bash scripts/install-tools.sh golangci-lint) && $$lint fmt $(PKGS)

vet: ## go vet
	$(GO) vet $(PKGS)

tools: ## Build the pinned developer tools (scripts/tools/go.mod) into scripts/tools/bin
	@bash scripts/install-tools.sh golangci-lint >/dev/null

lint: ## golangci-lint v2 with .golangci.yaml (the house rules; formatting included)
	@lint=$$(bash scripts/install-tools.sh golangci-lint) && $$lint run $(PKGS)

verify: vet ## vet, gofmt, go mod tidy leaves no diff, lint, import rules, docker-compose.yml and Dockerfile validity, the Helm chart and Grafana dashboard
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	@$(MAKE) --no-print-directory tidy/check
	@$(MAKE) --no-print-directory lint
	@bash scripts/check-imports.sh
	@cd localstack/composecheck && GOFLAGS=-mod=readonly $(GO) run . ../../docker-compose.yml
	@cd deploy/chartcheck && GOFLAGS=-mod=readonly $(GO) run . -chart ../helm/hooklane -readme ../../README.md -dashboard ../grafana/hooklane.json $(if $(CONTRACT),-contract ../../$(CONTRACT))

tidy: ## go mod tidy, in every module of the repository
	@set -e; for m in $$(git ls-files '*go.mod'); do (cd "$$(dirname "$$m")" && $(GO) mod tidy); done

tidy/check: ## Fail when go mod tidy would change a go.mod or go.sum
	@set -e; for m in $$(git ls-files '*go.mod'); do \
		d=$$(dirname "$$m"); \
		if ! diff=$$(cd "$$d" && $(GO) mod tidy -diff 2>&1); then echo "go mod tidy needed in $$d:"; echo "$$diff"; exit 1; fi; \
	done

stack/start: ## Start the local test stack (SQS- and MongoDB-compatible servers on loopback)
	bash localstack/stack.sh start

stack/stop: ## Stop the local test stack
	bash localstack/stack.sh stop
