package kafkatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// cliRun is one run of the graphtide command.
type cliRun struct {
	stdout, stderr string
	err            error
	took           time.Duration
}

// runGraphtide runs the graphtide command with args, stdin and extra
// environment variables, for at most timeout.
func runGraphtide(t *testing.T, env []string, stdin string, timeout time.Duration, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, graphtideBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	t0 := time.Now()
	err := cmd.Run()
	return cliRun{so.String(), se.String(), err, time.Since(t0)}
}

// edgeLines are n text records "src dst" of distinct edges, and the edges.
func edgeLines(n int, base uint64) (string, [][2]uint64) {
	var b strings.Builder
	edges := make([][2]uint64, n)
	for i := range n {
		edges[i] = [2]uint64{base + uint64(i%17), base + 100 + uint64(i)}
		fmt.Fprintf(&b, "%d %d\n", edges[i][0], edges[i][1])
	}
	return b.String(), edges
}

// produceOver produces lines to topic with the connection flags conn, and
// fails the test unless all are acknowledged.
func produceOver(t *testing.T, env, conn []string, topic, lines string) {
	t.Helper()
	r := runGraphtide(t, env, lines, 2*time.Minute, append(append([]string{"produce"}, conn...), "--topic", topic)...)
	if r.err != nil || !strings.Contains(r.stdout, "produced ") {
		t.Fatalf("graphtide produce %s: %v\nstdout: %s\nstderr: %s", strings.Join(conn, " "), r.err, r.stdout, lastLines(r.stderr, 10))
	}
}

// serveOver runs graphtide serve on topic with the connection flags conn,
// waits until every edge is readable over its API, stops it (SIGTERM:
// its clean stop commits to the group over the same connection) and
// returns its log.
func serveOver(t *testing.T, conn []string, topic string, edges [][2]uint64, extra ...string) *logBuffer {
	t.Helper()
	log := &logBuffer{}
	addr := fmt.Sprintf("127.0.0.1:%d", freeTCPPort(t))
	args := append(append([]string{"--dir", t.TempDir(), "--topics", topic, "--format", "text", "--group", uniq("group"),
		"--writes-topic", uniq("writes"), "--alert-topic", uniq("alerts"), "--dead-letter-topic", uniq("dead"),
		"--http-addr", addr}, conn...), extra...)
	p := startServe(t, graphtideBinary(t), log, args...)
	missing := func() int {
		n := 0
		for _, e := range edges {
			if code, _ := httpGet(fmt.Sprintf("http://%s/v1/edges/%d/%d", addr, e[0], e[1])); code != http.StatusOK {
				n++
			}
		}
		return n
	}
	if !waitFor(2*time.Minute, func() bool { return p.alive() && missing() == 0 }) {
		t.Fatalf("serve %s: %d of %d edges not readable (alive %v); log:\n%s", strings.Join(conn, " "), missing(), len(edges), p.alive(), log.tail(30))
	}
	if err := p.stop(); err != nil {
		t.Errorf("serve did not stop cleanly: %v\n%s", err, log.tail(20))
	}
	if !log.contains("stopped cleanly") {
		t.Errorf("serve over %s did not stop cleanly:\n%s", strings.Join(conn, " "), log.tail(20))
	}
	return log
}

// refusedRun checks that a run was refused at once, with the hint and
// the cause in its error.
func refusedRun(t *testing.T, what string, r cliRun, hint, cause string) {
	t.Helper()
	out := r.stdout + r.stderr
	if r.err == nil {
		t.Errorf("%s: succeeded, want a refusal\n%s", what, lastLines(out, 10))
		return
	}
	// Three refusals half a second apart, and a JVM-free client: seconds,
	// far below produce's --timeout (30s) and serve's retries (forever).
	if r.took > 15*time.Second {
		t.Errorf("%s: refused after %v, want at once", what, r.took.Round(time.Millisecond))
	}
	if !strings.Contains(out, "Kafka refused this client: "+hint) || !strings.Contains(out, cause) {
		t.Errorf("%s: the error does not say %q and %q:\n%s", what, hint, cause, lastLines(out, 10))
	}
}

// TestKafkaMutualTLS: over the broker's SSL listener, which requires
// client certificates, produce and serve with --tls-cert and --tls-key
// round-trip every edge (and serve's own producer, the writes topic, too),
// and bench kafka runs;
// without a certificate, or with one of a CA the broker does not trust,
// each is refused at once with an error that names --tls-cert.
func TestKafkaMutualTLS(t *testing.T) {
	t.Parallel()
	secureBroker(t)
	topic := uniq("mtls")
	waitSecureTopic(t, topic)
	tlsFlags := []string{"--brokers", secure.ssl, "--tls", "--tls-ca", tlsFile("ca.pem")}
	mtls := append(append([]string(nil), tlsFlags...), "--tls-cert", tlsFile("client.pem"), "--tls-key", tlsFile("client.key"))

	lines, edges := edgeLines(200, 1000)
	produceOver(t, nil, mtls, topic, lines)
	serveOver(t, mtls, topic, edges)
	// bench kafka too: its producer, plain consumer and ingester, whose
	// store must hold exactly what was produced.
	r := runGraphtide(t, nil, "", 3*time.Minute, append([]string{"bench", "kafka", "--scale", "8", "--edge-factor", "4", "--calibrate=false",
		"--partitions", "1", "--steady-for", "1s"}, mtls...)...)
	if r.err != nil || !strings.Contains(r.stdout, `"ingest_edges_per_sec"`) {
		t.Errorf("bench kafka over mTLS: %v\n%s\n%s", r.err, lastLines(r.stdout, 3), lastLines(r.stderr, 10))
	}

	// Refused: no certificate; a certificate of another CA.
	const hint = "the broker did not accept this client's certificate (check --tls-cert and --tls-key"
	r = runGraphtide(t, nil, lines, time.Minute, append(append([]string{"produce"}, tlsFlags...), "--topic", topic)...)
	refusedRun(t, "produce without a client certificate", r, hint, "tls: ")
	cert, key := foreignCert(t)
	r = runGraphtide(t, nil, lines, time.Minute, append(append([]string{"produce"}, tlsFlags...), "--topic", topic, "--tls-cert", cert, "--tls-key", key)...)
	refusedRun(t, "produce with a certificate of another CA", r, hint, "tls: ")
	r = runGraphtide(t, nil, "", time.Minute, append([]string{"serve", "--dir", t.TempDir(), "--topics", topic,
		"--http-addr", "127.0.0.1:0"}, tlsFlags...)...)
	refusedRun(t, "serve without a client certificate", r, hint, "tls: ")
	// And a client that does not trust the broker's certificate.
	r = runGraphtide(t, nil, lines, time.Minute, "produce", "--brokers", secure.ssl, "--tls", "--topic", topic,
		"--tls-cert", tlsFile("client.pem"), "--tls-key", tlsFile("client.key"))
	refusedRun(t, "produce without the broker's CA", r, "this client does not trust the broker's certificate (check --tls-ca)", "x509: ")
	// Plaintext to the SSL listener.
	r = runGraphtide(t, nil, lines, time.Minute, "produce", "--brokers", secure.ssl, "--topic", topic)
	refusedRun(t, "produce in plaintext to the SSL listener", r, "the broker's listener and this client disagree about TLS", "tls")
}

// foreignCert writes a client certificate (and key) of a CA the broker
// does not trust.
func foreignCert(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "graphtide-client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "foreign.pem"), filepath.Join(dir, "foreign.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestKafkaOAuthBearer: over the broker's SASL listener, whose OAUTHBEARER
// tokens Kafka validates against the identity provider's keys (JWKS),
// produce and serve get tokens from the provider's token endpoint (the
// client-credentials grant) and round-trip every edge; the client secret
// comes from GRAPHTIDE_SASL_OAUTH_CLIENT_SECRET or a file and shows in no
// output. A wrong secret, and tokens the broker must reject (signed by
// another key, expired, for another audience), are refused at once with
// an error that says so.
func TestKafkaOAuthBearer(t *testing.T) {
	t.Parallel()
	secureBroker(t)
	idp := secure.idp
	const secret = "oauth-client-s3cret-of-the-test"
	idp.addClient(idpClientID, secret)
	topic := uniq("oauth")
	waitSecureTopic(t, topic)
	oauthFlags := []string{"--brokers", secure.sasl, "--sasl-mechanism", "oauthbearer",
		"--sasl-oauth-token-endpoint", idp.srv.URL + "/token", "--sasl-oauth-client-id", idpClientID, "--sasl-oauth-scope", "graph.read graph.write"}
	secretEnv := []string{"GRAPHTIDE_SASL_OAUTH_CLIENT_SECRET=" + secret}
	secretFile := filepath.Join(t.TempDir(), "client-secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	lines, edges := edgeLines(200, 5000)
	issued := idp.issued.Load()
	produceOver(t, secretEnv, oauthFlags, topic, lines)
	log := serveOver(t, append(oauthFlags, "--sasl-oauth-client-secret-file", secretFile), topic, edges)
	if log.contains(secret) {
		t.Error("serve's log shows the client secret")
	}
	if idp.issued.Load() == issued {
		t.Error("the identity provider issued no token")
	}

	// Refused by the identity provider: a wrong secret.
	r := runGraphtide(t, []string{"GRAPHTIDE_SASL_OAUTH_CLIENT_SECRET=not-the-secret"}, lines, time.Minute,
		append(append([]string{"produce"}, oauthFlags...), "--topic", topic)...)
	refusedRun(t, "produce with a wrong client secret", r, "the identity provider gave no OAuth token", "invalid_client")

	// Refused by the broker: tokens it must not accept.
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"signed by another key", idp.sign(other, idp.kid, idp.claims(idpClientID, "", time.Hour))},
		{"expired", idp.sign(idp.key, idp.kid, idp.claims(idpClientID, "", -time.Minute))},
		{"for another audience", idp.sign(idp.key, idp.kid, func() map[string]any {
			c := idp.claims(idpClientID, "", time.Hour)
			c["aud"] = "another-service"
			return c
		}())},
		{"of another issuer", idp.sign(idp.key, idp.kid, func() map[string]any {
			c := idp.claims(idpClientID, "", time.Hour)
			c["iss"] = "https://impostor.example"
			return c
		}())},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
		if err := os.WriteFile(file, []byte(tc.token), 0o600); err != nil {
			t.Fatal(err)
		}
		r := runGraphtide(t, nil, lines, time.Minute, "produce", "--brokers", secure.sasl, "--sasl-mechanism", "oauthbearer",
			"--sasl-oauth-token-file", file, "--topic", topic)
		refusedRun(t, "produce with a token "+tc.name, r, "the broker rejected the OAuth token", `answered {"status":"invalid_token"}`)
	}
	// A token file with a good token works (platforms that mount one).
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte(idp.sign(idp.key, idp.kid, idp.claims(idpClientID, "", time.Hour))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	produceOver(t, nil, []string{"--brokers", secure.sasl, "--sasl-mechanism", "oauthbearer", "--sasl-oauth-token-file", good}, topic, lines)

	// serve with a token the broker rejects does not start.
	r = runGraphtide(t, nil, "", time.Minute, "serve", "--dir", t.TempDir(), "--topics", topic, "--http-addr", "127.0.0.1:0",
		"--brokers", secure.sasl, "--sasl-mechanism", "oauthbearer", "--sasl-oauth-token-file", filepath.Join(dir, "expired"))
	refusedRun(t, "serve with an expired token", r, "the broker rejected the OAuth token", `answered {"status":"invalid_token"}`)
	if strings.Contains(r.stderr+r.stdout, secret) {
		t.Error("an output shows the client secret")
	}
}

// TestKafkaSCRAM: over the SASL listener, SCRAM-SHA-512 with a user made by
// the Admin API (the password from GRAPHTIDE_SASL_PASSWORD) produces; a
// wrong password is refused at once.
func TestKafkaSCRAM(t *testing.T) {
	t.Parallel()
	secureBroker(t)
	adm := secureAdmin(t)
	user, password := uniq("user"), "scram-pass-of-the-test"
	res, err := adm.AlterUserSCRAMs(withTimeout(t, 30*time.Second), nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: password}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	topic := uniq("scram")
	waitSecureTopic(t, topic)
	lines, _ := edgeLines(50, 9000)
	scram := []string{"--brokers", secure.sasl, "--sasl-mechanism", "scram-sha-512", "--sasl-user", user}
	// The credentials reach the broker's SCRAM store a moment after the
	// answer: retry the first produce briefly.
	var r cliRun
	waitFor(30*time.Second, func() bool {
		r = runGraphtide(t, []string{"GRAPHTIDE_SASL_PASSWORD=" + password}, lines, time.Minute, append(append([]string{"produce"}, scram...), "--topic", topic)...)
		return r.err == nil
	})
	if r.err != nil || !strings.Contains(r.stdout, "produced 50 records") {
		t.Fatalf("produce over SCRAM-SHA-512: %v\n%s", r.err, lastLines(r.stderr, 10))
	}
	r = runGraphtide(t, []string{"GRAPHTIDE_SASL_PASSWORD=wrong"}, lines, time.Minute, append(append([]string{"produce"}, scram...), "--topic", topic)...)
	refusedRun(t, "produce with a wrong SCRAM password", r, "the broker rejected the SASL credentials", "SASL_AUTHENTICATION_FAILED")
}
