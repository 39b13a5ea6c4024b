package kafkaconn

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
)

// writeCertPair writes a self-signed certificate with common name cn and
// its key as PEM files.
func writeCertPair(t *testing.T, certFile, keyFile, cn string, serial int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClientCertificate: --tls-cert and --tls-key give every handshake
// the client certificate, the files renewed on disk are used from the next
// handshake on, and files that do not load are refused at once, naming
// the flags and never the key.
func TestClientCertificate(t *testing.T) {
	dir := t.TempDir()
	cert, key := filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	writeCertPair(t, cert, key, "first", 1)
	o := Options{TLS: true, TLSCert: cert, TLSKey: key}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg, err := o.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	commonName := func() string {
		t.Helper()
		c, err := cfg.GetClientCertificate(&tls.CertificateRequestInfo{})
		if err != nil || c == nil || len(c.Certificate) == 0 {
			t.Fatalf("no client certificate: %v", err)
		}
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		return leaf.Subject.CommonName
	}
	if cn := commonName(); cn != "first" {
		t.Fatalf("client certificate %q, want first", cn)
	}
	// Renewed: the next handshake has the new one.
	time.Sleep(10 * time.Millisecond) // a modification time of its own
	writeCertPair(t, cert, key, "second", 2)
	if cn := commonName(); cn != "second" {
		t.Errorf("after renewal: client certificate %q, want second", cn)
	}
	// Half written (a key of another certificate): the last good pair.
	other := filepath.Join(dir, "other.key")
	writeCertPair(t, filepath.Join(dir, "other.pem"), other, "other", 3)
	b, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := commonName(); cn != "second" {
		t.Errorf("with a key that does not match: client certificate %q, want the last good one (second)", cn)
	}

	// Refused at start.
	keyPEM, _ := os.ReadFile(other)
	for _, tc := range []struct {
		cert, key, want string
	}{
		{filepath.Join(dir, "missing.pem"), key, "--tls-cert: stat "},
		{cert, filepath.Join(dir, "missing.key"), "--tls-key: stat "},
		{cert, key, "--tls-cert " + cert + " and --tls-key " + key + ": tls: private key does not match public key"},
		{key, key, "--tls-cert " + key + " and --tls-key " + key + ": tls: failed to find certificate PEM data"},
	} {
		_, err := (&Options{TLS: true, TLSCert: tc.cert, TLSKey: tc.key}).ClientOpts()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("cert %s, key %s: %v, want %q", tc.cert, tc.key, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), strings.Split(string(keyPEM), "\n")[1]) {
			t.Errorf("the error shows the key: %v", err)
		}
	}
}

// idp is a token endpoint of the OAuth 2.0 client-credentials grant.
type idp struct {
	t        *testing.T
	srv      *httptest.Server
	lifetime atomic.Int64 // seconds of expires_in (0: none given)
	fail     atomic.Bool  // answer 503
	requests atomic.Int64
}

func newIDP(t *testing.T, clientID, secret, scope string) *idp {
	p := &idp{t: t}
	p.lifetime.Store(100)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.requests.Add(1)
		if p.fail.Load() {
			http.Error(w, `{"error":"temporarily_unavailable"}`, http.StatusServiceUnavailable)
			return
		}
		id, sec, ok := r.BasicAuth()
		if !ok {
			id, sec = r.PostFormValue("client_id"), r.PostFormValue("client_secret")
		}
		if r.PostFormValue("grant_type") != "client_credentials" || r.PostFormValue("scope") != scope || id != clientID || sec != secret {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"error":"invalid_client"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		ans := map[string]any{"access_token": fmt.Sprintf("token-%d", n), "token_type": "Bearer"}
		if l := p.lifetime.Load(); l > 0 {
			ans["expires_in"] = l
		}
		_ = json.NewEncoder(w).Encode(ans)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// TestTokenSource: a token from the client-credentials grant is kept until
// 80% of its lifetime, then renewed; a failed renewal keeps a token that
// has not expired; without one the error names the endpoint, not the
// secret.
func TestTokenSource(t *testing.T) {
	const secret = "client-s3cret"
	p := newIDP(t, "graphtide", secret, "kafka write")
	src := newTokenSource(p.srv.URL, "graphtide", secret, scopes("kafka,write"))
	clock := time.Unix(1_700_000_000, 0)
	src.now = func() time.Time { return clock }
	fetch := src.fetch
	src.fetch = func(ctx context.Context) (*oauth2.Token, error) {
		tok, err := fetch(ctx)
		if err == nil && !tok.Expiry.IsZero() {
			// The library dates expiry by the wall clock: move it to ours.
			tok.Expiry = clock.Add(time.Duration(p.lifetime.Load()) * time.Second)
		}
		return tok, err
	}
	ctx := context.Background()
	get := func(want string) {
		t.Helper()
		tok, err := src.token(ctx)
		if err != nil || tok != want {
			t.Fatalf("at %v: token %q, %v; want %q", clock.Sub(time.Unix(1_700_000_000, 0)), tok, err, want)
		}
	}
	get("token-1")
	clock = clock.Add(79 * time.Second)
	get("token-1") // within 80% of 100 s
	clock = clock.Add(2 * time.Second)
	get("token-2") // renewed
	p.fail.Store(true)
	clock = clock.Add(81 * time.Second)
	get("token-2") // renewal failed; token-2 valid for 19 s more
	clock = clock.Add(20 * time.Second)
	_, err := src.token(ctx)
	if err == nil || !strings.HasPrefix(err.Error(), "OAUTHBEARER: no token from "+p.srv.URL+": ") || !strings.Contains(err.Error(), "503") {
		t.Errorf("renewal failed after expiry: %v", err)
	}
	p.fail.Store(false)
	get("token-5")
	if n := p.requests.Load(); n != 5 {
		t.Errorf("%d requests to the token endpoint, want 5", n)
	}

	// No expires_in: a JWT's exp, else a minute.
	p.lifetime.Store(0)
	clock = clock.Add(time.Hour)
	get("token-6")
	clock = clock.Add(unknownLifetime * 8 / 10)
	get("token-7")

	// A wrong secret: the endpoint's refusal, without the secret.
	bad := newTokenSource(p.srv.URL, "graphtide", "wrong-"+secret, scopes("kafka write"))
	_, err = bad.token(ctx)
	if err == nil || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), secret) {
		t.Errorf("wrong secret: %v", err)
	}
}

func TestJWTExpiry(t *testing.T) {
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		tok  string
		want int64 // 0: zero time
	}{
		{enc(`{"alg":"RS256"}`) + "." + enc(`{"sub":"a","exp":1700000100}`) + ".sig", 1700000100},
		{enc(`{"alg":"RS256"}`) + "." + enc(`{"sub":"a"}`) + ".sig", 0},
		{"opaque-token", 0},
		{"a.!!!.c", 0},
	} {
		got := jwtExpiry(tc.tok)
		if (tc.want == 0 && !got.IsZero()) || (tc.want != 0 && got.Unix() != tc.want) {
			t.Errorf("%s: %v, want %d", tc.tok, got, tc.want)
		}
	}
}

// saslInitial is the first message the OAUTHBEARER mechanism of o sends.
func saslInitial(t *testing.T, o Options) (string, error) {
	t.Helper()
	auth, err := o.oauthAuth()
	if err != nil {
		return "", err
	}
	_, msg, err := oauth.Oauth(auth).Authenticate(context.Background(), "broker:9092")
	return string(msg), err
}

// TestOAuthMechanism: the token (from the endpoint or the token file, read
// again at every authentication) and the extensions go into the
// OAUTHBEARER message (RFC 7628).
func TestOAuthMechanism(t *testing.T) {
	const secret = "client-s3cret"
	p := newIDP(t, "graphtide", secret, "")
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := Options{SASLMechanism: "oauthbearer", OAuthTokenURL: p.srv.URL, OAuthClientID: "graphtide", OAuthClientSecretFile: secretFile,
		OAuthExtensions: []string{"logicalCluster=lkc-1", "identityPoolId=pool-2"}}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if opts, err := o.ClientOpts(); err != nil || len(opts) != 1 {
		t.Fatalf("ClientOpts: %d options, %v", len(opts), err)
	}
	msg, err := saslInitial(t, o)
	if want := "n,,\x01auth=Bearer token-1\x01identityPoolId=pool-2\x01logicalCluster=lkc-1\x01\x01"; err != nil || msg != want {
		t.Errorf("initial message %q, %v; want %q", msg, err, want)
	}
	// The secret from the environment.
	t.Setenv(ClientSecretEnv, secret)
	o.OAuthClientSecretFile, o.OAuthExtensions = "", nil
	if msg, err := saslInitial(t, o); err != nil || msg != "n,,\x01auth=Bearer token-2\x01\x01" {
		t.Errorf("secret from %s: %q, %v", ClientSecretEnv, msg, err)
	}
	// A token file, read at every authentication.
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte("platform-token-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	o = Options{SASLMechanism: "oauthbearer", OAuthTokenFile: tokFile}
	auth, err := o.oauthAuth()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"platform-token-a", "platform-token-b"} {
		if err := os.WriteFile(tokFile, []byte(want+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if a, err := auth(context.Background()); err != nil || a.Token != want {
			t.Errorf("token file: %q, %v; want %q", a.Token, err, want)
		}
	}
	// Missing or empty files are refused at once.
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{SASLMechanism: "oauthbearer", OAuthTokenFile: filepath.Join(dir, "none")}, "--sasl-oauth-token-file: open "},
		{Options{SASLMechanism: "oauthbearer", OAuthTokenFile: empty}, "--sasl-oauth-token-file " + empty + " is empty"},
		{Options{SASLMechanism: "oauthbearer", OAuthTokenURL: p.srv.URL, OAuthClientID: "c", OAuthClientSecretFile: filepath.Join(dir, "none")}, "--sasl-oauth-client-secret-file: open "},
		{Options{SASLMechanism: "oauthbearer", OAuthTokenURL: p.srv.URL, OAuthClientID: "c", OAuthClientSecretFile: empty}, "--sasl-oauth-client-secret-file " + empty + " is empty"},
	} {
		os.Unsetenv(ClientSecretEnv)
		if _, err := tc.o.ClientOpts(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
	// A token endpoint that refuses: the authentication fails with its
	// answer, and the secret is nowhere in it.
	o = Options{SASLMechanism: "oauthbearer", OAuthTokenURL: p.srv.URL, OAuthClientID: "graphtide", OAuthClientSecret: "not-" + secret}
	_, err = saslInitial(t, o)
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response.StatusCode != http.StatusUnauthorized || strings.Contains(err.Error(), secret) {
		t.Errorf("a wrong client secret: %v", err)
	}
}

// TestRefused: what the brokers answer a client whose TLS or SASL settings
// they refuse is told apart from a broker that is not there, and says
// which settings to check; CheckAccess returns only refusals, after three
// in a row.
func TestRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	srvCert, srvKey := filepath.Join(dir, "srv.pem"), filepath.Join(dir, "srv.key")
	writeCertPair(t, srvCert, srvKey, "127.0.0.1", 9)
	pair, err := tls.LoadX509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	cliCert, cliKey := filepath.Join(dir, "cli.pem"), filepath.Join(dir, "cli.key")
	writeCertPair(t, cliCert, cliKey, "client", 10)

	// A broker whose listener requires a client certificate.
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAnyClientCert}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check := func(o Options) error {
		t.Helper()
		opts, err := o.ClientOpts()
		if err != nil {
			t.Fatal(err)
		}
		// The test's server certificate is self-signed for no name.
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{InsecureSkipVerify: true, //nolint:gosec // a test server
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				if o.TLSCert == "" {
					return &tls.Certificate{}, nil
				}
				c, err := tls.LoadX509KeyPair(o.TLSCert, o.TLSKey)
				return &c, err
			}}))
		cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(o.Brokers...)}, opts...)...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		return CheckAccess(ctx, cl, 10*time.Second)
	}
	addr := c.ListenAddrs()
	if err := check(Options{Brokers: addr, TLS: true, TLSCert: cliCert, TLSKey: cliKey}); err != nil {
		t.Errorf("with a client certificate: %v", err)
	}
	t0 := time.Now()
	err = check(Options{Brokers: addr, TLS: true})
	var re *RefusedError
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "Kafka refused this client: the broker did not accept this client's certificate (check --tls-cert and --tls-key") {
		t.Errorf("without a client certificate: %v", err)
	}
	if d := time.Since(t0); d < time.Second || d > 5*time.Second {
		t.Errorf("refused after %v: want three refusals half a second apart", d)
	}
	// Nobody there: not a refusal, and at once.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := l.Addr().String()
	l.Close()
	t0 = time.Now()
	if err := check(Options{Brokers: []string{gone}, TLS: true}); err != nil || time.Since(t0) > 5*time.Second {
		t.Errorf("no broker: %v after %v, want nil at once", err, time.Since(t0))
	}

	// A client that does not trust the broker's certificate.
	opts, err := (&Options{TLS: true, TLSCert: cliCert, TLSKey: cliKey}).ClientOpts()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr...)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	err = CheckAccess(ctx, cl, 10*time.Second)
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "Kafka refused this client: this client does not trust the broker's certificate (check --tls-ca)") {
		t.Errorf("an untrusted broker: %v", err)
	}

	// SASL refusals as the broker answers them, and what is no refusal.
	for _, tc := range []struct {
		err  error
		hint string // "": not a refusal
	}{
		{fmt.Errorf("authenticating: %w", kerr.SaslAuthenticationFailed), "the broker rejected the SASL credentials"},
		{kerr.UnsupportedSaslMechanism, "the broker's listener does not offer --sasl-mechanism"},
		{fmt.Errorf("%w", &tokenError{endpoint: "https://idp", err: errors.New("503")}), "the identity provider gave no OAuth token"},
		{errors.New("invalid large response size 352518912 > limit 104857600; the first three bytes received appear to be a tls alert record for TLS v1.2; is this a plaintext connection speaking to a tls endpoint?"),
			"the broker's listener and this client disagree about TLS"},
		{err: nil},
		{err: context.DeadlineExceeded},
		{err: kerr.NotLeaderForPartition},
		{err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}},
	} {
		re := Refused(tc.err)
		switch {
		case tc.hint == "" && re != nil:
			t.Errorf("%v taken for a refusal: %v", tc.err, re)
		case tc.hint != "" && (re == nil || !strings.HasPrefix(re.Hint, tc.hint) || !errors.Is(re, tc.err)):
			t.Errorf("%v: %v, want the hint %q", tc.err, re, tc.hint)
		}
	}
	// The broker's answer to a token it rejects.
	if _, _, err := (oauthSession{}).Challenge([]byte(`{"status":"invalid_token"}`)); Refused(err) == nil ||
		!strings.HasPrefix(Refused(err).Hint, "the broker rejected the OAuth token") || !strings.Contains(err.Error(), `answered {"status":"invalid_token"}`) {
		t.Errorf("a rejected token: %v", err)
	}
}
