# gpupool: two commands do all setup on a fresh machine.
#   make conformance   build what is missing, run the contract on the embedded cluster
#   make test          unit tests and fuzzing, then the mutants beside the kind path, the CLI end to end, the suites and a scale run
#   make conformance-kind   the main job on a kind cluster with a real kubelet (needs root
#                      once, to install and start Docker; builds the node image offline)
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
GO ?= go

CANDIDATE ?=
FLEET ?=
GPUPOOL_FLAGS ?=

BIN := bin/gpupool

# Every Go build here uses the flags of the control plane's build
# (hack/build-control-plane.sh: static, -trimpath), so the k8s.io packages
# gpupool shares with kube-apiserver and the others are compiled once and
# come from Go's build cache after that (hack/versions_test.go keeps the
# module versions aligned).
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(shell $(GO) env GOFLAGS) -trimpath)
RUN_FLAGS := $(if $(CANDIDATE),--candidate $(CANDIDATE)) $(if $(FLEET),--fleet $(FLEET)) $(GPUPOOL_FLAGS)

.PHONY: all build control-plane autoscaler gpupool conformance mutants mutants-serial test test-unit test-suites test-e2e test-scale bench-scale vet clean down help \
	docker build-kind conformance-kind test-kind mutants-and-kind test-fuzz

all: build

help:
	@sed -n 's/^#   //p' Makefile

## Binaries: the control plane is built from Go modules into a cache keyed by
## version (~/.cache/gpupool); a warm run only checks it is there.
control-plane:
	bash hack/build-control-plane.sh all

## The autoscaler (Karpenter's KWOK cloud provider), from its own module
## under hack/tools/karpenter into the same cache: about 1 min 40 s cold
## after the control plane. The reference fleet's autoscaled pools need it.
autoscaler:
	bash hack/build-control-plane.sh karpenter

gpupool:
	@. hack/lib.sh && with_progress "gpupool" $(GO) build -v -o $(BIN) ./cmd/gpupool

build: control-plane autoscaler gpupool

## The main job: reference candidate and fleet unless CANDIDATE / FLEET say otherwise.
conformance: build
	$(BIN) run $(RUN_FLAGS)

## Proof that every check can fail: each broken candidate must fail exactly
## the checks its candidate.yaml lists; prints the mutation score.
mutants: build
	$(BIN) mutants

## The same verdicts with one suite at a time: the reference passes and
## every broken candidate fails exactly its list, as `make mutants` holds
## them with the suites side by side (about twice as long; not in `make test`).
mutants-serial: build
	$(BIN) run --suite-parallelism 1 --out reports/out/reference-serial
	$(BIN) mutants --suite-parallelism 1 --out reports/out/mutants-serial

test: test-unit test-fuzz mutants-and-kind

## Go's native fuzzing of every parser of user input, each for a short fixed
## time from a seed corpus of the built-in manifests. An input that fails is
## written to the package's testdata/fuzz/<target>/ and, committed, runs in
## test-unit from then on as a regression test. hack/fuzz.sh tries a target
## once more after Go 1.26's deadline race at -fuzztime's end (no finding).
FUZZ_TIME ?= 8s
FUZZ_TARGETS := fakegpu:FuzzParseDevicePluginConfig fakegpu:FuzzParseMIGPartedConfig fakegpu:FuzzParseClusterPolicy \
	e2e/fleet:FuzzParse e2e/scale:FuzzParseWorkload e2e/candidate:FuzzDecode e2e/differential:FuzzParse e2e/explore:FuzzShapeOf
test-fuzz:
	GO=$(GO) bash hack/fuzz.sh $(FUZZ_TIME) $(FUZZ_TARGETS)

## The embedded mutants beside everything else that needs a cluster: the
## mutants keep the CPU busy (about 35 min); beside them, one after another
## (-k: each runs even if one before failed), the kind path, which mostly
## waits on a real kubelet, then the CLI end to end, the suites and the
## scale run, which fit in what the mutants leave. Their output is printed
## when both end (reports/out/beside-mutants.log).
BESIDE_MUTANTS := test-kind test-e2e test-suites test-scale
mutants-and-kind: build
	bash hack/beside.sh reports/out/beside-mutants.log '$(MAKE) -k -j1 --no-print-directory $(BESIDE_MUTANTS)' '$(MAKE) --no-print-directory mutants'

## The kind path. A Docker engine from Debian's docker.io (installed and
## started if missing), kind, the node binaries, a kind node image built
## with nothing pulled, and the images gpupool loads into kind; all cached.
docker:
	bash hack/setup-docker.sh

build-kind: build docker
	bash hack/build-control-plane.sh kind
	bash hack/build-control-plane.sh node
	$(if $(KIND_NODE_IMAGE),,bash hack/build-kind-node-image.sh >/dev/null)
	bash hack/build-kind-images.sh >/dev/null

## The main job on kind: the same suites, plus the checks only a real
## kubelet can make (labelled provider=kind).
conformance-kind: build-kind
	$(BIN) run --provider kind $(RUN_FLAGS)

## The kind path end to end: the reference passes every check on kind, each
## kind-only check fails on a candidate that breaks it, the differential
## also agrees where the toolkit honours the variable (the envvar strategy),
## and simulated pools joined to a cluster run their stack inside it. The
## four kind mutants run at once: most of each is a real kubelet's waits
## (a mutant's checks wait out their budgets), not CPU.
KIND_MUTANTS := manifests/candidates/broken-no-fail-requests-greater-than-one,manifests/candidates/broken-default-timesliced,manifests/candidates/broken-device-plugin-disabled,manifests/candidates/broken-dra-node-runs-device-plugin
test-kind: build-kind
	$(BIN) run --provider kind --out reports/out/test-kind
	$(BIN) mutants --provider kind --suites ./suites/kubelet --candidates $(KIND_MUTANTS) --parallel 4 --out reports/out/test-kind-mutants
	$(BIN) run --provider kind --suites kubelet --candidate manifests/candidates/broken-toolkit-envvar-permissive --out reports/out/test-kind-envvar
	go test -tags 'e2e kind' -count=1 -timeout 20m -run TestSimulatedStackRunsInTheCluster ./cmd/gpupool/

## The scale path at small size (200 nodes, about 1,000 pods, a short churn):
## asserts the contract in bulk and that the run completes, never a speed.
test-scale: build
	$(BIN) scale --fleets manifests/fleets/scale-200.yaml --workload manifests/workloads/correctness.yaml --out reports/out/test-scale

## First the ratio issue #27 holds gpupool to: upstream scheduler_perf's
## SchedulingWithExtendedResource/5000pods_5000nodes in-process on this
## machine now (hack/bench-inprocess.sh; its test binary built once into
## the cache), then a 5,000-pod burst on 5,000 GPU nodes under the
## reference (workloads/in-process-ratio.yaml) set beside it.
## Then scheduler pressure at 1,000, 5,000 and 10,000 GPU nodes: prints every
## figure beside its target, writes scale.json and scale.html (plots).
## Scheduler bursts of 4,000, 20,000 and 2,000 pods; each run is then filled
## to 5 pods per node by the harness (50,000 pods at 10,000 nodes), which
## binds pods about four times as fast as the scheduler places them here.
## Then claim scheduling: 500 DRA nodes, 2,000 pods claiming a GPU each
## from a ResourceClaimTemplate, then 2,000 more measured, set beside
## scheduler_perf's SchedulingWithResourceClaimTemplate (56 pods/s). A run
## takes one workload for all its fleets, so this is a second run.
BENCH_FLEETS ?= manifests/fleets/scale-1k.yaml,manifests/fleets/scale-5k.yaml,manifests/fleets/scale-10k.yaml
BENCH_PODS ?= 4000,20000,2000
BENCH_DRA_FLEET ?= manifests/fleets/scale-dra-500.yaml
BENCH_DRA_WORKLOAD ?= manifests/workloads/dra-claims.yaml
BENCH_INPROCESS := reports/out/bench-inprocess.json
BENCH_AUTOSCALE_FLEET ?= manifests/fleets/scale-5k-autoscale.yaml
BENCH_AUTOSCALE_WORKLOAD ?= manifests/workloads/autoscale-burst.yaml
bench-scale: build
	bash hack/bench-inprocess.sh $(BENCH_INPROCESS)
	$(BIN) scale --fleets manifests/fleets/scale-5k.yaml --workload manifests/workloads/in-process-ratio.yaml --inprocess $(BENCH_INPROCESS) --out reports/out/bench-ratio
	$(BIN) scale --fleets $(BENCH_FLEETS) --pods $(BENCH_PODS) --out reports/out/bench-scale
	$(BIN) scale --fleets $(BENCH_DRA_FLEET) --workload $(BENCH_DRA_WORKLOAD) --out reports/out/bench-scale-dra
	$(BIN) scale --fleets $(BENCH_AUTOSCALE_FLEET) --candidate manifests/candidates/scale --workload $(BENCH_AUTOSCALE_WORKLOAD) --out reports/out/bench-scale-autoscale

vet:
	$(GO) vet ./...
	$(GO) vet -tags e2e ./cmd/gpupool

## Pure packages: no cluster, no binaries.
test-unit: vet
	$(GO) test -count=1 ./fakegpu/... ./e2e/... ./reports/... ./cmd/... ./docs/... ./hack/...

## Each suite package on its own embedded cluster, as `go test` users run them.
test-suites: build
	$(GO) test -count=1 -p 1 ./suites/...

## The CLI end to end: the reference passes, broken candidates fail the
## checks they break, bad input stops before any cluster, nothing is left behind.
test-e2e: build autoscaler
	bash hack/setup-chromium.sh
	$(GO) test -count=1 -p 1 -tags e2e -timeout 30m ./cmd/gpupool/...

## Removes every cluster gpupool made, on every provider.
down: gpupool
	$(BIN) down

clean:
	rm -rf bin reports/out
