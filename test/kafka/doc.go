// Package kafkatest holds the integration tests of the ingest path
// (internal/ingest) against a real Apache Kafka broker: the single-node
// KRaft broker of deploy/kafka, which TestMain starts on free loopback ports
// in a temporary directory and stops at the end.
//
// Run them with `make test-kafka` (or go test -race ./test/kafka/...). Set
// GRAPHTIDE_KAFKA_BROKERS=host:port[,host:port] to use a running cluster
// instead (TestBrokerRestart is then skipped: it restarts the broker). If
// the broker cannot be started the tests fail with the script's output,
// unless -short is given, in which case they skip.
//
// TestDocs runs the shell examples of README.md and docs/*.md against the
// same broker, a subtest per page (docs/doctest.md; internal/doctest).
//
// The package has no non-test code.
package kafkatest
