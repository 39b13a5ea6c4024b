# graphtide -- see README.md. `make test` is the whole test suite (what CI
# runs); `make run` builds and runs the main job on this machine.
GO ?= go
BIN := bin/graphtide
SCALE ?= 20
EDGE_FACTOR ?= 16

.PHONY: all build deps lint test test-go test-cpp test-kafka vet run bench clean

all: build

# Installs what is missing to build, test and lint (scripts/deps.sh, every
# group); `make build` installs nothing.
deps:
	@scripts/deps.sh

.PHONY: deps-build deps-kafka

# Only what building and running need: Go (checked) and g++ (cgo).
deps-build:
	@scripts/deps.sh build

# What the real broker (deploy/kafka/kafka.sh) needs: Java 17+ and Maven.
deps-kafka:
	@scripts/deps.sh kafka

build:
	$(GO) build -o $(BIN) ./cmd/graphtide

vet: deps
	$(GO) vet ./...

# golangci-lint, clang-format, clang-tidy and shellcheck (scripts/lint.sh);
# make test runs it first.
lint: deps
	scripts/lint.sh

# Go tests under the race detector (the C++ core is compiled in by cgo).
# The Kafka integration tests (test/kafka) run in test-kafka instead.
test-go: deps
	$(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v /test/kafka)

# Integration tests of the ingest path against a real Apache Kafka broker,
# started from deploy/kafka on free loopback ports (set
# GRAPHTIDE_KAFKA_BROKERS to use a running cluster instead).
test-kafka: deps
	$(GO) test -race -count=1 -timeout 15m ./test/kafka/...

# The C++ core's own tests under AddressSanitizer and UBSan.
test-cpp: deps
	cgo/test/run_asan.sh

test: lint vet test-go test-cpp test-kafka

# The ingest benchmark (store vs Pebble vs static CSR); see README.
bench: deps build
	$(BIN) bench ingest --scale $(SCALE) --edge-factor $(EDGE_FACTOR)

# The main job: graphtide serve, on ./graphtide-data. Without BROKERS it
# starts the embedded broker (for trying it out); e.g. make run
# BROKERS=127.0.0.1:9092. It installs only what building and running
# need (deps-build). Other settings as GRAPHTIDE_<FLAG> variables, e.g.
# GRAPHTIDE_HTTP_ADDR=127.0.0.1:9500 GRAPHTIDE_EMBEDDED_PORT=9300 make run.
BROKERS ?=
run: deps-build build
	$(BIN) serve $(if $(BROKERS),--brokers $(BROKERS))

clean:
	rm -rf bin cgo/build-asan cgo/build cgo/build-tidy
