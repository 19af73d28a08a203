# convtgen: thin targets over the Go commands.
GO ?= go
CUDA_STUBS ?= .cache/cuda
RANDOM_N ?= 60
RANDOM_SEED ?= 1

.PHONY: all generate check test verifier random big tune apply-tune gpu-check bench report

all: generate

# Render every spec into out/ (and the verifier's kernel registry).
generate:
	$(GO) generate ./...

# Fail if out/ is stale; write nothing.
check:
	$(GO) run ./gen/cmd/convtgen -check

# Everything that needs no GPU: vet, unit tests, short fuzz runs of the
# parser and of the whole pipeline, parse to render (counts of inputs,
# not durations: Go 1.26's fuzzing coordinator can fail a
# duration run at its deadline with no failing input, golang/go#75804), the
# harness's own tests. With nvcc on PATH the tests also compile every
# emitted kernel for sm_80 and sm_90 and fail on spills.
test:
	python3 -m unittest discover -s verify/harness -p 'test_*.py'
	$(GO) vet ./...
	$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=300000x ./gen/spec
	$(GO) test -run='^$$' -fuzz=FuzzPipeline -fuzztime=20000x ./gen
	$(GO) test ./...

# The GPU verifier, built here against CUDA 11.8 headers and Debian's stub
# libcuda.so (fetched once into $(CUDA_STUBS)), carried to the GPU host: it
# needs only libcuda.so.1 there. The commit is baked in (no git there).
verifier:
	.ci/fetch-cuda-headers $(CUDA_STUBS)
	CGO_CFLAGS="-I$(abspath $(CUDA_STUBS))/include" CGO_LDFLAGS="-L$(abspath $(CUDA_STUBS))/lib" \
		$(GO) build -tags cuda -ldflags "-X main.buildCommit=$$(git rev-parse HEAD 2>/dev/null)" \
		-o bin/verify ./verify/cmd/verify

# Random valid configurations rendered as submissions (the kernel verifier
# draws its own with -random; these are for running end to end).
random:
	rm -rf build/random
	$(GO) run ./gen/cmd/convtgen -random $(RANDOM_N) -seed $(RANDOM_SEED) -out build/random

# The big configurations (tensors of 2^31+ elements, little compute) as
# submissions, for verify/harness/bigcheck.py on a GPU host.
big:
	rm -rf build/big
	$(GO) run ./gen/cmd/convtgen -specs verify/testdata/big -out build/big

# Tuning candidates of every spec (precision and tiles), timed by gpu-check;
# ONLY=x15,x16 renders just those candidates beside the specs' own choices.
ONLY ?=
tune:
	rm -rf build/tune
	$(GO) run ./gen/cmd/convtgen -tune build/tune $(if $(ONLY),-only $(ONLY))

# Write the fastest correct candidate of each spec and backend back into the
# spec and regenerate (RESULTS: results with the current choices' and the
# candidates' times, comma-separated: gpu-check's tune stage writes the CUDA
# ones to tune-kernels.json, the Triton ones to tune-triton.json).
RESULTS ?= build/gpu/kernels.json,build/gpu/tune-kernels.json,build/gpu/tune-triton.json
apply-tune:
	$(GO) run ./gen/cmd/convtgen -apply-tune $(RESULTS) -manifest build/tune/manifest.json

# On a GPU host (python3 with torch; no Go needed; bin/ and build/ carried):
# the kernel verifier (registered kernels, random configurations, tuning
# candidates) and the evaluator-style run of every submission.
gpu-check:
	verify/gpu-check.sh

# On a GPU host: the benchmark alone, the evaluator's way (every submission
# in out/ against PyTorch default and strict fp32; kernel-only times with
# the kernel verifier when bin/verify is there).
bench:
	mkdir -p build/gpu
	if [ -x bin/verify ]; then bin/verify -root . -tiers kernel,e2e -time -json build/gpu/kernels.json -e2e-json build/gpu/e2e.json; \
	else python3 verify/harness/evaluate.py --time --json build/gpu/e2e.json out; fi

# Keep the GPU host's results (copied back into build/gpu) that the report
# reads in out/gpu (not the per-GPU parts a merged run leaves) and render
# out/REPORT.md, out/report.json and the plot from them.
report:
	mkdir -p out/gpu
	cd build/gpu && cp $$(ls e2e.json kernels.json tune-kernels.json random.json random-sweep*.json random-kernels*.json mutate.json big.json commit 2>/dev/null) ../../out/gpu/
	$(GO) run ./verify/cmd/report -in out/gpu -out out
