package kafkaconn

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// certLoader gives TLS handshakes the client certificate of two PEM files,
// read again when either file changes (a certificate renewed on disk is
// used from the next connection on, without a restart).
type certLoader struct {
	certFile, keyFile string

	mu    sync.Mutex       // Protected by mu: the fields below.
	cert  *tls.Certificate // the last pair that loaded
	stamp string           // the files' sizes and modification times when it loaded
}

func newCertLoader(certFile, keyFile string) (*certLoader, error) {
	l := &certLoader{certFile: certFile, keyFile: keyFile}
	stamp, err := l.stat()
	if err == nil {
		err = l.load(stamp)
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// stat is the files' sizes and modification times.
func (l *certLoader) stat() (string, error) {
	var b strings.Builder
	for _, f := range []struct{ flag, path string }{{"--tls-cert", l.certFile}, {"--tls-key", l.keyFile}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", f.flag, err)
		}
		fmt.Fprintf(&b, "%d/%d;", fi.Size(), fi.ModTime().UnixNano())
	}
	return b.String(), nil
}

func (l *certLoader) load(stamp string) error {
	cert, err := tls.LoadX509KeyPair(l.certFile, l.keyFile)
	if err != nil {
		// The error names what is wrong (no PEM data, a key that does not
		// match), never the key.
		return fmt.Errorf("--tls-cert %s and --tls-key %s: %w", l.certFile, l.keyFile, err)
	}
	l.cert, l.stamp = &cert, stamp
	return nil
}

// get is tls.Config.GetClientCertificate. While changed files do not load
// (half written, say), the last pair that did is used until it expires;
// then the handshake fails with why they do not load.
func (l *certLoader) get(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	stamp, err := l.stat()
	if err == nil && stamp != l.stamp {
		err = l.load(stamp)
	}
	if err != nil && l.cert.Leaf != nil && time.Now().After(l.cert.Leaf.NotAfter) {
		return nil, err
	}
	return l.cert, nil
}

// tokenSource gets OAUTHBEARER tokens by the OAuth 2.0 client-credentials
// grant and keeps one until 80% of its lifetime has passed (as Kafka's own
// clients do, sasl.login.refresh.window.factor), so that a connection
// never authenticates with a token about to expire.
type tokenSource struct {
	endpoint string
	fetch    func(context.Context) (*oauth2.Token, error)
	now      func() time.Time

	mu        sync.Mutex // Protected by mu: the fields below; held while fetching.
	tok       string
	refreshAt time.Time
	expiry    time.Time // zero: unknown
}

// tokenTimeout bounds one request to the token endpoint.
const tokenTimeout = 30 * time.Second

// unknownLifetime is how long a token whose lifetime the endpoint does not
// say (and that is not a JWT with exp) is used.
const unknownLifetime = time.Minute

func newTokenSource(endpoint, clientID, secret string, scopes []string) *tokenSource {
	cfg := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: endpoint, Scopes: scopes}
	hc := &http.Client{Timeout: tokenTimeout}
	return &tokenSource{endpoint: endpoint, now: time.Now, fetch: func(ctx context.Context) (*oauth2.Token, error) {
		return cfg.Token(context.WithValue(ctx, oauth2.HTTPClient, hc))
	}}
}

// token returns a token valid for a while yet, fetching one when needed.
// When a renewal fails while the token held has not expired, that token
// is used and the renewal tried again at the next authentication.
func (s *tokenSource) token(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.tok != "" && now.Before(s.refreshAt) {
		return s.tok, nil
	}
	t, err := s.fetch(ctx)
	if err == nil && t.AccessToken == "" {
		err = fmt.Errorf("the answer holds no access_token")
	}
	if err != nil {
		if s.tok != "" && (s.expiry.IsZero() || now.Before(s.expiry)) {
			return s.tok, nil
		}
		return "", &tokenError{endpoint: s.endpoint, err: err}
	}
	expiry := t.Expiry
	if expiry.IsZero() {
		expiry = jwtExpiry(t.AccessToken)
	}
	lifetime := unknownLifetime
	if !expiry.IsZero() {
		lifetime = expiry.Sub(now)
	}
	s.tok, s.expiry, s.refreshAt = t.AccessToken, expiry, now.Add(lifetime*8/10)
	return s.tok, nil
}

// jwtExpiry is the exp claim of a JWT (zero when tok is not one or has
// none).
func jwtExpiry(tok string) time.Time {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}
	}
	var claims struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(payload, &claims) != nil || claims.Exp <= 0 {
		return time.Time{}
	}
	return time.Unix(int64(claims.Exp), 0)
}

// oauthMechanism is franz-go's OAUTHBEARER mechanism, with the broker's
// refusal of a token read: the broker answers a token it rejects with an
// error status (RFC 7628, 3.2.2), which franz-go's session reports only as
// "unexpected data"; this one reports the status as a
// *tokenRejectedError.
type oauthMechanism struct{ sasl.Mechanism }

func newOAuthMechanism(fn func(context.Context) (oauth.Auth, error)) sasl.Mechanism {
	return oauthMechanism{oauth.Oauth(fn)}
}

func (m oauthMechanism) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s, msg, err := m.Mechanism.Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return oauthSession{s}, msg, nil
}

type oauthSession struct{ sasl.Session }

func (s oauthSession) Challenge(resp []byte) (bool, []byte, error) {
	if len(resp) != 0 {
		status := strings.ToValidUTF8(string(resp[:min(len(resp), 512)]), "?")
		return false, nil, &tokenRejectedError{status: status}
	}
	return s.Session.Challenge(resp)
}
