# graphtide -- see README.md. `make test` is the whole test suite (what CI
# runs); `make run` builds and runs the main job on this machine.
GO ?= go
BIN := bin/graphtide
SCALE ?= 20
EDGE_FACTOR ?= 16

.PHONY: all build test test-go test-cpp vet run bench clean bootstrap

all: build

bootstrap:
	@scripts/bootstrap.sh

build: bootstrap
	$(GO) build -o $(BIN) ./cmd/graphtide

vet: bootstrap
	$(GO) vet ./...

# Go tests under the race detector (the C++ core is compiled in by cgo).
test-go: bootstrap
	$(GO) test -race -count=1 -timeout 20m ./...

# The C++ core's own tests under AddressSanitizer and UBSan.
test-cpp: bootstrap
	cgo/test/run_asan.sh

test: vet test-go test-cpp

# The ingest benchmark (store vs Pebble vs static CSR); see README.
bench: build
	$(BIN) bench ingest --scale $(SCALE) --edge-factor $(EDGE_FACTOR)

# The main job: graphtide serve. Without BROKERS it starts the embedded
# broker (for trying it out); e.g. make run BROKERS=127.0.0.1:9092
BROKERS ?=
run: build
	$(BIN) serve $(if $(BROKERS),--brokers $(BROKERS))

clean:
	rm -rf bin cgo/build-asan cgo/build
