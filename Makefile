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

.PHONY: all build control-plane gpupool conformance mutants test test-unit test-suites test-e2e test-scale bench-scale vet clean down help

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

test: test-unit test-suites test-e2e test-scale mutants

## The scale path at small size (200 nodes, about 1,000 pods, a short churn):
## asserts the contract in bulk and that the run completes, never a speed.
test-scale: build
	$(BIN) scale --fleets manifests/fleets/scale-200.yaml --workload manifests/workloads/correctness.yaml --out reports/out/test-scale

## Scheduler pressure at 1,000, 5,000 and 10,000 GPU nodes: prints every
## figure beside its target, writes scale.json and scale.html (plots).
BENCH_FLEETS ?= manifests/fleets/scale-1k.yaml,manifests/fleets/scale-5k.yaml,manifests/fleets/scale-10k.yaml
BENCH_PODS ?= 4000,20000,10000
bench-scale: build
	$(BIN) scale --fleets $(BENCH_FLEETS) --pods $(BENCH_PODS) --out reports/out/bench-scale

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
