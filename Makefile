# Drover: the two commands a newcomer needs are `make dev` and `make test`.
# Both install what they need first (Go modules, and PostgreSQL from Debian's
# packages when it is missing and we run as root).

GO       ?= go
BIN      := $(CURDIR)/bin
PKGS     := ./...
TESTTIME ?= 20m
export GOFLAGS := -buildvcs=false

.PHONY: all build deps test test-short vet fmt-check bench soak dev clean

all: build

## deps: install system packages the tests and `make dev` need (PostgreSQL).
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

## test: the whole suite: static checks, unit, cluster, linearizability
## (short form) and end-to-end tests with real processes.
test: deps fmt-check vet build
	$(GO) test -count=1 -timeout $(TESTTIME) $(PKGS)

## soak: the long linearizability and crash runs.
soak: deps build
	DROVER_SOAK=1 $(GO) test -count=1 -timeout 60m -run 'Linearizab|Kill9' -v ./tests/... ./spoke/...

## bench: benchmarks that print figures (see bench/README.md).
bench: deps build
	$(GO) build -o bench/bin/droverd ./cmd/droverd
	cd bench && $(GO) build -o bin/etcd go.etcd.io/etcd/server/v3
	cd bench && $(GO) run ./cmd/commitbench -targets drover,etcd -levels 1,64,256 -duration 5s
	cd bench && $(GO) run ./cmd/agentbench -n 10000 -reps 5
	cd bench && $(GO) run ./cmd/hubbench
	cd bench && $(GO) run ./cmd/migbench -n 100 -reps 3
	cd bench && $(GO) run ./cmd/migbench -n 1000 -reps 1

## dev: run Drover locally on embedded defaults (see README).
dev: deps build
	$(BIN)/droverd dev

clean:
	rm -rf $(BIN) bench/bin
