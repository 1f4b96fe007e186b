# gpupool: two commands do all setup on a fresh machine.
#   make conformance   build what is missing, run the contract on the embedded cluster
#   make test          unit tests, then the suites and the CLI end to end
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go

CANDIDATE ?=
FLEET ?=
GPUPOOL_FLAGS ?=

BIN := bin/gpupool
RUN_FLAGS := $(if $(CANDIDATE),--candidate $(CANDIDATE)) $(if $(FLEET),--fleet $(FLEET)) $(GPUPOOL_FLAGS)

.PHONY: all build control-plane gpupool conformance mutants test test-unit test-suites test-e2e vet clean down help

all: build

help:
	@sed -n 's/^#   //p' Makefile

## Binaries: the control plane is built from Go modules into a cache keyed by
## version (~/.cache/gpupool); a warm run only checks it is there.
control-plane:
	bash hack/build-control-plane.sh all

gpupool:
	$(GO) build -o $(BIN) ./cmd/gpupool

build: control-plane gpupool

## The main job: reference candidate and fleet unless CANDIDATE / FLEET say otherwise.
conformance: build
	$(BIN) run $(RUN_FLAGS)

## Proof that every check can fail: each broken candidate must fail exactly
## the checks its candidate.yaml lists; prints the mutation score.
mutants: build
	$(BIN) mutants

test: test-unit test-suites test-e2e mutants

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./cmd/gpupool

## Pure packages: no cluster, no binaries.
test-unit: vet
	$(GO) test -count=1 ./fakegpu/... ./e2e/... ./reports/... ./cmd/...

## Each suite package on its own embedded cluster, as `go test` users run them.
test-suites: build
	$(GO) test -count=1 -p 1 ./suites/...

## The CLI end to end: the reference passes, broken candidates fail the
## checks they break, bad input stops before any cluster, nothing is left behind.
test-e2e: build
	$(GO) test -count=1 -p 1 -tags e2e -timeout 30m ./cmd/gpupool/...

down: gpupool
	$(BIN) down

clean:
	rm -rf bin reports/out
