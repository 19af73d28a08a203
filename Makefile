# convtgen: thin targets over the Go commands.
GO ?= go
CUDA_STUBS ?= .cache/cuda
RANDOM_N ?= 60
RANDOM_SEED ?= 1
CONVTGEN := bin/convtgen

.PHONY: all generate check test verifier random big tune apply-tune gpu-check bench report $(CONVTGEN)

all: generate

# The generator's command, rebuilt by every target that uses it (a no-op
# through go build's cache when nothing changed). Make runs the binary, not
# go run or go generate: those wrap a failure in their own lines and turn
# every exit status into 1, and convtgen's errors are one line each.
$(CONVTGEN):
	@$(GO) build -o $@ ./gen/cmd/convtgen

# Render every spec into out/ (and the verifier's kernel registry).
generate: $(CONVTGEN)
	@$(CONVTGEN) generate

# List the stale files of out/ and fail if there are any; write nothing.
check: $(CONVTGEN)
	@$(CONVTGEN) check

# quietly WHAT,COMMAND: a line saying WHAT, then COMMAND's last line (go
# test's "ok" line, or "ok" for none) when it passes, all of its output
# when it fails.
quietly = echo "== $(1)"; log=$$(mktemp); if $(2) >$$log 2>&1; then \
	if [ -s $$log ]; then tail -n 1 $$log; else echo "   ok"; fi; rm -f $$log; \
	else cat $$log; rm -f $$log; exit 1; fi

# Everything that needs no GPU, a line per step: the harness's own tests,
# vet, short fuzz runs of the parser and of the whole pipeline (counts of
# inputs, not durations: Go 1.26's fuzzing coordinator can fail a duration
# run at its deadline with no failing input, golang/go#75804), then every
# Go test (a package may take 45 minutes: the CPU emulation of every
# level-2 forward and kernel form of both targets runs about 20 on two cores). With nvcc on PATH the tests also compile every emitted kernel
# for its target (sm80: sm_80 and compute_80; sm90: sm_90a, which needs
# CUDA 12.0 or later) and fail on spills; without it those tests skip, and
# so do the CPU emulation tier's (both targets' files) without g++: the last
# step says so.
test:
	@echo "== harness unit tests (python3)"
	@python3 verify/harness/run_tests.py
	@$(call quietly,go vet,$(GO) vet ./...)
	@$(call quietly,fuzz the spec parser (300000 inputs),$(GO) test -run='^$$' -fuzz=FuzzParse -fuzztime=300000x ./gen/spec)
	@$(call quietly,fuzz the pipeline (20000 inputs),$(GO) test -run='^$$' -fuzz=FuzzPipeline -fuzztime=20000x ./gen)
	@echo "== go test ./..."
	@command -v nvcc >/dev/null || echo "   skipped: compiling every kernel for its target (verify, verify/gpu, verify/cmd/verify): no nvcc on PATH (.ci/install-nvcc installs it)"
	@command -v g++ >/dev/null || echo "   skipped: the CPU emulation tier of the CUDA kernels (verify/emulate): no g++ on PATH"
	@$(GO) test -timeout 45m ./...

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
random: $(CONVTGEN)
	rm -rf build/random
	$(CONVTGEN) random -n $(RANDOM_N) -seed $(RANDOM_SEED) -out build/random

# The big configurations (tensors of 2^31+ elements, little compute) as
# submissions, for verify/harness/bigcheck.py on a GPU host.
big: $(CONVTGEN)
	rm -rf build/big
	$(CONVTGEN) generate -out build/big verify/testdata/big

# Tuning candidates of every spec (precision and tiles), timed by gpu-check;
# ONLY=x15,x16 renders just those candidates beside the specs' own choices,
# UNDER=specs/zoo/ one folder's specs, TOP=4 the chooser's four cheapest
# estimates where it ranks (how far the zoo's choices are from their rivals).
ONLY ?=
UNDER ?=
TOP ?=
tune: $(CONVTGEN)
	rm -rf build/tune
	$(CONVTGEN) tune -out build/tune $(if $(ONLY),-only $(ONLY)) $(if $(UNDER),-under $(UNDER)) $(if $(TOP),-top $(TOP))

# Write the fastest correct candidate of each spec, backend and target back
# into the spec's kernel.<target> section and regenerate (RESULTS: results with the current choices' and the
# candidates' times, comma-separated: gpu-check's tune stage writes the CUDA
# ones to tune-kernels.json, the Triton ones to tune-triton.json).
RESULTS ?= build/gpu/kernels.json,build/gpu/tune-kernels.json,build/gpu/tune-triton.json
apply-tune: $(CONVTGEN)
	$(CONVTGEN) apply-tune -manifest build/tune/manifest.json $(RESULTS)

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
	cd build/gpu && cp $$(ls e2e.json level2.json zoo.json kernels.json tune-kernels.json random.json random-sweep*.json random-kernels*.json mutate.json big.json commit 2>/dev/null) ../../out/gpu/
	$(GO) run ./verify/cmd/report -in out/gpu -out out
