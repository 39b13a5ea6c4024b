# graphtide -- see README.md. `make test` is the whole test suite (what CI
# runs); `make run` builds and runs the main job on this machine.
GO ?= go
BIN := bin/graphtide
SCALE ?= 20
EDGE_FACTOR ?= 16
# Every go command compiles with -trimpath: the Go build cache then keys a
# package by its content, not by the clone's path, so a fresh clone reuses
# what an earlier one compiled (and binaries name no build path).
export GOFLAGS := $(strip $(filter-out -trimpath,$(GOFLAGS)) -trimpath)

.PHONY: all build deps lint test test-go test-cpp test-kafka test-alone test-volume test-spark vet run bench bench-report clean

all: build

# Installs what is missing to build, test and lint (scripts/deps.sh, every
# group); `make build` installs nothing.
deps:
	@scripts/deps.sh

.PHONY: deps-build deps-kafka dd

# Only what building and running need: Go (checked) and g++ (cgo).
deps-build:
	@scripts/deps.sh build

# What the real broker (deploy/kafka/kafka.sh) needs: Java 17+ and Maven.
deps-kafka:
	@scripts/deps.sh kafka

# graphtide and graphtide-bench (the benchmarks, which `graphtide bench`
# runs: a binary of their own, so that graphtide does not link their
# baselines), side by side in bin/.
build:
	$(GO) build -o bin/ ./cmd/graphtide ./cmd/graphtide-bench

# The parts of make test below each install what is missing first
# (scripts/deps.sh); NO_DEPS=1 leaves that out (scripts/test.sh runs deps
# once, then the parts at the same time).
TEST_DEPS := $(if $(NO_DEPS),,deps)
# Where the Go test parts save their go test -json streams.
TEST_OUT ?= .test-out
# Test binaries go test runs at once: above the 2 cores of a small
# machine, as many packages mostly wait (on fsync, sockets, subprocesses).
# Six: with four, the cores were idle at times while test-go's binaries
# waited.
GO_TEST_P ?= 6
# Kafka tests run side by side (go test -parallel).
KAFKA_TEST_P ?= 4

# Without the cgocall analyzer: under -trimpath the build cache hands a
# clone the cgo output another clone compiled, whose line directives name
# that clone's files, and cgocall (which parses them) fails once that clone
# is gone. golangci-lint (lint, run without -trimpath from one fixed path:
# scripts/lint.sh) runs cgocall with the rest of vet's analyzers.
vet: $(TEST_DEPS)
	$(GO) vet -cgocall=false ./...

# golangci-lint, gofmt, clang-format, clang-tidy and shellcheck (scripts/lint.sh).
lint: $(TEST_DEPS)
	scripts/lint.sh

# Go tests under the race detector (the C++ core is compiled in by cgo);
# the tests of volume (volume.Mark and volume.Size: many random cases
# against an oracle, large graphs, damage at every offset), which the
# race detector makes two to ten times dearer, are skipped or run smaller
# here and whole in test-volume. The Kafka integration tests (test/kafka)
# run in test-kafka instead. Prints failures whole, then the ten slowest
# tests (scripts/testreport).
test-go: $(TEST_DEPS)
	@mkdir -p $(TEST_OUT)
	$(GO) run ./scripts/testreport -save $(TEST_OUT)/go.json -slowest 10 -- \
		$(GO) test -json -race -count=1 -p $(GO_TEST_P) -timeout 20m \
		$$({ $(GO) list $(GO_TEST_FIRST); $(GO) list ./... | grep -v /test/kafka; } | awk '!seen[$$0]++')

# The tests of volume, whole: the Go ones without the race detector (the
# packages and tests below), then the C++ ones without the sanitizers
# (internal/core/test/run_volume.sh). Both run; it fails when either fails. Not
# part of make test (they are its soak: about 270 s of CPU, under 3 minutes
# here); CI runs them after it (.ci/run).
test-volume: $(TEST_DEPS)
	@mkdir -p $(TEST_OUT)
	$(GO) run ./scripts/testreport -save $(TEST_OUT)/go-volume.json -slowest 10 -- \
		$(GO) test -json -count=1 -p $(GO_TEST_P) -timeout 20m -run '^($(GO_TEST_VOLUME_RUN))$$' $(GO_TEST_VOLUME); \
		govol=$$?; internal/core/test/run_volume.sh && exit $$govol

# The packages with tests of volume, and those tests (kept equal to the
# tests that call volume.Mark or volume.Size by internal/testref/volume's
# TestMarkedTestsRunWithoutRace).
GO_TEST_VOLUME := ./cmd/graphtide ./internal/api ./internal/engine ./internal/views ./internal/views/analytics ./internal/views/analytics/kernels ./internal/views/paths
GO_TEST_VOLUME_RUN := TestAnalyticsLargeGraphsReference|TestBFSMatchesReference|TestCorruptEventColumnIsRefused|TestCrashRecovery|TestCrashRecoveryWithManifestRewrites|TestDegreeMonitorMatchesReference|TestEventsCrashAtEveryEditPoint|TestEveryBitFlipIsRefusedOrHarmless|TestEveryFileKind|TestFanWindowMatchesOracle|TestFindMatchesReference|TestFraudCyclesMatchReference|TestFraudPullLimits|TestModelDeepLevels|TestModelRandomized|TestPageRankFollowsADegreeStream|TestPageRankMatchesReference|TestPageRankPushesOnALargeGraph|TestPageRankSinglePrecisionWithinItsTolerance|TestRandomPaymentsRaiseFewTimedRings|TestReadsWithoutInEdges|TestSSSPMatchesReference|TestSSSPWholeWeights|TestStaticViewsNeverChange|TestTopoApplyCostsTheChange|TestTopoApplyStreamsOracle|TestTypedTimedStoreFollowsTheOracle|TestUpdateWorkFollowsTheChange|TestVertexRecordsFollowTheOracle|TestWCCMatchesReference|TestXsumIsExact

# The packages whose tests take longest, listed first: go test starts the
# packages' tests in the order given (-p at a time), so the long ones do
# not start last and end the run alone.
GO_TEST_FIRST := ./cmd/graphtide ./internal/views/analytics ./internal/engine ./internal/api ./internal/views

# Integration tests of the ingest path against a real Apache Kafka broker,
# started from deploy/kafka on free loopback ports when the first test
# needs it (set GRAPHTIDE_KAFKA_BROKERS to use a running cluster instead).
# Its tests mostly wait (on the broker, on child processes): all but a
# few run side by side (test/kafka's serialTests), KAFKA_TEST_P at a time. (make
# test is bound by its CPU, not by this part's waits: the few in a go
# test of their own beside the others, with a broker of their own, end
# this part sooner and the others later.)
test-kafka: $(TEST_DEPS)
	@mkdir -p $(TEST_OUT)
	$(GO) run ./scripts/testreport -save $(TEST_OUT)/kafka.json -slowest 10 -- \
		$(GO) test -json -race -count=1 -parallel $(KAFKA_TEST_P) -timeout 15m -skip '$(TEST_ALONE)' ./test/kafka/...

# The tests that measure serve's resources against its budget: make test
# runs them after its other parts, alone on the machine (scripts/test.sh),
# as a benchmark is; the budget is serve's when it has the CPU its plan
# assumes (docs/guarantees.md).
TEST_ALONE := ^TestServeStaysWithinItsBudget$$
test-alone: $(TEST_DEPS)
	@mkdir -p $(TEST_OUT)
	$(GO) run ./scripts/testreport -save $(TEST_OUT)/alone.json -- \
		$(GO) test -json -race -count=1 -timeout 10m -run '$(TEST_ALONE)' ./test/kafka/...

# The issue's 287,000 random payments among 20,000 accounts through serve
# on a real broker: the ring alerts of max_span=1h and 24h against the
# reference (scripts/payments); a few minutes, so not part of make test.
test-payments-287k: $(TEST_DEPS)
	$(GO) test -count=1 -timeout 30m ./test/kafka/ -run 'TestRandomPaymentsRings$$' -payments.287k -v

# Graph-wide analytics on Apache Spark (issue 45): two partitioned owners
# on a real broker exported at one cut, GraphFrames over the set
# (deploy/spark/graphframes_job.py), its answers against a single
# instance's own analytics. The test installs pyspark and the GraphFrames
# jars (deploy/spark/setup.sh, once); about 3 minutes on 2 cores, so not
# part of make test: CI runs it after it (.ci/run).
test-spark: $(TEST_DEPS)
	@mkdir -p $(TEST_OUT)
	$(GO) run ./scripts/testreport -save $(TEST_OUT)/spark.json -- \
		$(GO) test -json -count=1 -timeout 20m -run '^TestSparkOverPartitionedExport$$' ./test/kafka/ -spark

# The C++ core's own tests under AddressSanitizer and UBSan, which run the
# tests of volume smaller or skip them (test-volume runs them whole).
test-cpp: $(TEST_DEPS)
	internal/core/test/run_asan.sh

# Every part above, at the same time (scripts/test.sh): each part's output
# printed whole when it ends, then each part's wall time and the ten
# slowest tests. Fails when any part fails.
test: deps
	@scripts/test.sh

# The ingest benchmark (store vs Pebble vs static CSR); see README.
bench: deps build
	$(BIN) bench ingest --scale $(SCALE) --edge-factor $(EDGE_FACTOR)

# Every benchmark with the commands docs/benchmarks.md states: their JSON
# into docs/bench/, then the page rendered from it (scripts/bench-report.sh;
# about 20 minutes on 2 cores, a broker of its own for kafka and serve).
bench-report: deps-build deps-kafka
	scripts/bench-report.sh

# The Differential Dataflow baseline of bench analytics (bench/dd, DD 0.26
# built from its crates.io sources with cargo; scripts/dd.sh): a few
# minutes the first time, so not part of make build or make test.
dd:
	scripts/dd.sh build

# The main job: graphtide serve, on ./graphtide-data. Without BROKERS it
# starts the embedded broker (for trying it out); e.g. make run
# BROKERS=127.0.0.1:9092. It installs only what building and running
# need (deps-build). Other settings as GRAPHTIDE_<FLAG> variables, e.g.
# GRAPHTIDE_HTTP_ADDR=127.0.0.1:9500 GRAPHTIDE_EMBEDDED_PORT=9300 make run.
BROKERS ?=
run: deps-build build
	$(BIN) serve $(if $(BROKERS),--brokers $(BROKERS))

clean:
	rm -rf bin internal/core/build-asan internal/core/build-volume internal/core/build internal/core/build-tidy $(TEST_OUT)
