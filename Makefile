# Drover: the two commands a newcomer needs are `make dev` and `make test`.
# Both install what they need first (Go modules, and PostgreSQL from Debian's
# packages when it is missing and we run as root).

GO       ?= go
BIN      := $(CURDIR)/bin
PKGS     := ./...
TESTTIME ?= 20m
export GOFLAGS := -buildvcs=false

.PHONY: dashboard-shots all build deps test test-short vet fmt-check bench soak dev clean web web-deps web-check web-test

all: build

## deps: install system packages the tests and `make dev` need (PostgreSQL,
## Node.js and npm, Chromium for the browser tests).
deps:
	@scripts/deps.sh

## build: the three binaries into ./bin.
build:
	$(GO) build -o $(BIN)/ ./cmd/...

## vet / fmt-check: static checks run by `make test`.
vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## web-deps: the dashboard's npm packages, installed (`npm ci`) only when
## node_modules is missing or package-lock.json changed since. npm's cache
## stays in ~/.npm, outside the clone.
web-deps:
	@if [ -f web/package-lock.json ]; then cd web && \
		want=$$(sha256sum package-lock.json | cut -d' ' -f1); \
		if [ "$$(cat node_modules/.drover-lock 2>/dev/null)" != "$$want" ]; then \
			npm ci --prefer-offline --no-audit --no-fund && mkdir -p node_modules && echo "$$want" > node_modules/.drover-lock; \
		fi; fi

## web: build the dashboard into web/dist (embedded by droverd) and record
## the hash of its sources there (the stale check, docs/dashboard.md).
web: web-deps
	@if [ -f web/package.json ]; then \
		(cd web && npm run build) && $(GO) run ./web/cmd/sourcehash web > web/dist/source.sha256; \
	else echo "web: no app sources (web/package.json); keeping the committed web/dist"; fi

## web-check: the committed web/dist is exactly what the sources build.
web-check: web-deps
	@if [ -f web/package.json ]; then \
		tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		(cd web && DROVER_WEB_OUT="$$tmp/dist" npm run build) && \
		$(GO) run ./web/cmd/sourcehash web > "$$tmp/dist/source.sha256" && \
		diff -r "$$tmp/dist" web/dist || { echo "web/dist does not match the sources: run make web"; exit 1; }; \
	fi

## web-test: the dashboard's own tests and checks (vitest, types, lint).
web-test: web-deps
	@if [ -f web/package.json ]; then cd web && npm test && npm run check; fi

## test: the whole suite: static checks, the dashboard's build check and
## tests, unit, cluster, linearizability (short form), end-to-end and
## browser tests with real processes.
test: deps fmt-check vet web-check web-test build
	$(GO) test -count=1 -timeout $(TESTTIME) $(PKGS)

## soak: the long linearizability and crash runs.
soak: deps build
	DROVER_SOAK=1 $(GO) test -count=1 -timeout 60m -run 'Linearizab|Kill9' -v ./tests/... ./spoke/...

## bench: benchmarks that print figures (see bench/README.md).
bench: deps build web
	$(GO) build -o bench/bin/droverd ./cmd/droverd
	cd bench && $(GO) build -o bin/etcd go.etcd.io/etcd/server/v3
	cd bench && $(GO) run ./cmd/commitbench -targets drover,etcd -levels 1,64,256 -duration 5s
	cd bench && $(GO) run ./cmd/agentbench -n 10000 -reps 5
	cd bench && $(GO) run ./cmd/hubbench
	cd bench && $(GO) run ./cmd/migbench -n 100 -reps 3
	cd bench && $(GO) run ./cmd/migbench -n 1000 -reps 1
	cd bench && $(GO) run ./cmd/webbench -models 1000 -units 1000

## dashboard-shots: the screenshots of docs/dashboard.md, taken by the
## dashboard's browser test.
dashboard-shots: deps build web
	DROVER_DASHBOARD_SHOTS=$(CURDIR)/docs/dashboard $(GO) test -count=1 -run TestDashboardEndToEnd ./tests

## dev: build the dashboard and run Drover locally on embedded defaults
## (see README); it prints the dashboard's URL.
dev: deps web build
	$(BIN)/droverd dev

clean:
	rm -rf $(BIN) bench/bin
