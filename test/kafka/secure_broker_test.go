package kafkatest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// afterAll runs after every test of the package (TestMain), in reverse.
var afterAll []func()

// secure is the broker of the security tests, started by the project's
// script on first use: beside PLAINTEXT, an SSL listener that requires
// client certificates (the script makes the CA and the certificates) and
// a SASL_PLAINTEXT listener with SCRAM and OAUTHBEARER, whose tokens
// Kafka's own validator (OAuthBearerValidatorCallbackHandler) checks
// against the keys of the test's identity provider.
var secure struct {
	once      sync.Once
	err       error
	out       string
	dir       string
	plaintext string // the listeners' addresses
	ssl       string
	sasl      string
	idp       *testIDP
}

// Claims every token of the identity provider carries, and the broker
// checks (--oauth-issuer, --oauth-audience).
const (
	idpAudience = "graphtide-kafka"
	idpClientID = "graphtide"
)

// secureBroker starts (once) the broker of the security tests, or fails
// the test (skips it under -short) when it cannot be started.
func secureBroker(t *testing.T) {
	t.Helper()
	secure.once.Do(startSecureBroker)
	if secure.err != nil {
		if testing.Short() {
			t.Skipf("no secured Kafka broker (-short): %v", secure.err)
		}
		t.Fatalf("no secured Kafka broker: %v\n%s", secure.err, lastLines(secure.out, 12))
	}
}

func startSecureBroker() {
	t0 := time.Now()
	secure.idp = newTestIDP()
	dir, err := os.MkdirTemp("", "graphtide-kafka-secure-")
	if err != nil {
		secure.err = err
		return
	}
	secure.dir = dir
	reaper := startReaper(dir)
	ok := false
	afterAll = append(afterAll, func() {
		if _, out, err := script(time.Minute, "stop", "--dir", dir); err != nil {
			fmt.Fprintf(os.Stderr, "stopping the secured Kafka broker: %v\n%s", err, out)
		}
		if reaper != nil {
			_ = reaper.Process.Kill()
			_, _ = reaper.Process.Wait()
		}
		secure.idp.srv.Close()
		if ok {
			os.RemoveAll(dir)
		} else {
			fmt.Fprintf(os.Stderr, "kafka test: the secured broker's data and logs are kept in %s\n", dir)
		}
	})
	for attempt := 0; attempt < 3; attempt++ {
		var p, q int
		if p, err = freePortPair(); err == nil {
			q, err = freePortPair()
		}
		if err != nil {
			secure.err = err
			return
		}
		if q == p || q == p+1 || q+1 == p {
			continue
		}
		var so string
		var out []byte
		so, out, err = script(5*time.Minute, "start", "--port", strconv.Itoa(p), "--dir", dir,
			"--ssl-port", strconv.Itoa(q), "--sasl-port", strconv.Itoa(q+1),
			"--oauth-jwks-url", secure.idp.srv.URL+"/jwks", "--oauth-issuer", secure.idp.issuer(), "--oauth-audience", idpAudience)
		secure.out = string(out)
		if err == nil && strings.TrimSpace(so) != fmt.Sprintf("127.0.0.1:%d", p) {
			err = fmt.Errorf("start printed %q, want 127.0.0.1:%d", strings.TrimSpace(so), p)
		}
		if err != nil && strings.Contains(secure.out, "already in use") {
			continue
		}
		if err != nil {
			secure.err = fmt.Errorf("%s start --dir %s: %w", broker.script, dir, err)
			return
		}
		secure.plaintext = fmt.Sprintf("127.0.0.1:%d", p)
		secure.ssl = fmt.Sprintf("127.0.0.1:%d", q)
		secure.sasl = fmt.Sprintf("127.0.0.1:%d", q+1)
		break
	}
	if secure.plaintext == "" {
		secure.err = fmt.Errorf("no free ports for the secured broker: %w", err)
		return
	}
	if err := waitReady([]string{secure.plaintext}, 60*time.Second); err != nil {
		secure.err = fmt.Errorf("the secured broker started but is not usable: %w\n%s", err, logTail(dir))
		return
	}
	ok = true
	fmt.Fprintf(os.Stderr, "kafka test: secured broker ready in %v: PLAINTEXT %s, SSL %s, SASL_PLAINTEXT %s (dir %s)\n",
		time.Since(t0).Round(time.Millisecond), secure.plaintext, secure.ssl, secure.sasl, dir)
}

// tlsFile is a file the script made for the SSL listener's clients.
func tlsFile(name string) string { return filepath.Join(secure.dir, "tls", name) }

// secureAdmin is an admin client of the secured broker's PLAINTEXT
// listener.
func secureAdmin(t *testing.T) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(secure.plaintext))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// ---------------------------------------------------------------- identity provider

// testIDP is an OAuth 2.0 identity provider: a JWKS endpoint (/jwks) with
// its RSA key, and a token endpoint (/token) of the client-credentials
// grant that signs RS256 JWTs for its clients.
type testIDP struct {
	srv      *httptest.Server
	key      *rsa.PrivateKey
	kid      string
	lifetime atomic.Int64 // seconds a token is valid
	mu       sync.Mutex
	secrets  map[string]string // client id -> secret; Protected by mu.
	issued   atomic.Int64      // tokens issued
	refused  atomic.Int64      // token requests refused
}

func newTestIDP() *testIDP {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	p := &testIDP{key: key, kid: "graphtide-test-1", secrets: map[string]string{}}
	p.lifetime.Store(3600)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"keys": []map[string]string{{
			"kty": "RSA", "use": "sig", "alg": "RS256", "kid": p.kid,
			"n": base64.RawURLEncoding.EncodeToString(key.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(key.E)).Bytes()),
		}}})
	})
	mux.HandleFunc("POST /token", p.token)
	p.srv = httptest.NewServer(mux)
	return p
}

func (p *testIDP) issuer() string { return p.srv.URL }

// addClient registers a client of the client-credentials grant.
func (p *testIDP) addClient(id, secret string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.secrets[id] = secret
}

func (p *testIDP) token(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
	}
	p.mu.Lock()
	want, known := p.secrets[id]
	p.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.PostFormValue("grant_type") != "client_credentials" || !known || secret != want {
		p.refused.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"invalid_client","error_description":"unknown client or wrong secret"}`))
		return
	}
	life := p.lifetime.Load()
	tok := p.sign(p.key, p.kid, p.claims(id, r.PostFormValue("scope"), time.Duration(life)*time.Second))
	p.issued.Add(1)
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": life})
}

// claims are the claims of a token for sub valid for life from now.
func (p *testIDP) claims(sub, scope string, life time.Duration) map[string]any {
	now := time.Now()
	c := map[string]any{"iss": p.issuer(), "aud": idpAudience, "sub": sub, "iat": now.Unix(), "exp": now.Add(life).Unix()}
	if scope != "" {
		c["scope"] = scope
	}
	return c
}

// sign makes an RS256 JWT of claims, signed by key, with key id kid.
func (p *testIDP) sign(key *rsa.PrivateKey, kid string, claims map[string]any) string {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	head := enc(map[string]string{"alg": "RS256", "typ": "JWT", "kid": kid}) + "." + enc(claims)
	sum := sha256.Sum256([]byte(head))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// waitSecureTopic creates topic on the secured broker (PLAINTEXT) and
// waits until it has a leader.
func waitSecureTopic(t *testing.T, topic string) {
	t.Helper()
	createTopicAt(t, []string{secure.plaintext}, topic, 1)
}

// withTimeout is a context for one step of a test.
func withTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
