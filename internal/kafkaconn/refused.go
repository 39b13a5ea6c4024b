package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/oauth2"
)

// RefusedError is a connection refused for its TLS or SASL settings, or
// an OAuth token the identity provider would not give: retrying with the
// same settings cannot succeed. Its message says which settings to check.
type RefusedError struct {
	Hint string // what to check, naming the flags
	Err  error
}

func (e *RefusedError) Error() string {
	return "Kafka refused this client: " + e.Hint + ": " + e.Err.Error()
}

func (e *RefusedError) Unwrap() error { return e.Err }

// tokenError is a token the identity provider did not give.
type tokenError struct {
	endpoint string
	err      error
}

func (e *tokenError) Error() string {
	return fmt.Sprintf("OAUTHBEARER: no token from %s: %v", e.endpoint, e.err)
}

func (e *tokenError) Unwrap() error { return e.err }

// tokenRejectedError is the broker's refusal of an OAUTHBEARER token: the
// error status it answers (RFC 7628, 3.2.2), e.g. {"status":"invalid_token"}.
type tokenRejectedError struct{ status string }

func (e *tokenRejectedError) Error() string {
	return "OAUTHBEARER: the broker answered " + e.status
}

// Refused returns err as a *RefusedError when it is a refusal of this
// client's TLS or SASL settings (a certificate the other side does not
// trust, SASL credentials or a token the broker rejects, TLS or SASL that
// the listener does not speak, no OAuth token), else nil.
func Refused(err error) *RefusedError {
	if err == nil {
		return nil
	}
	var (
		re       *RefusedError
		remote   *net.OpError
		rejected *tokenRejectedError
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		eof      *kgo.ErrFirstReadEOF
		tokErr   *tokenError
		retrieve *oauth2.RetrieveError
	)
	hint := ""
	switch {
	case errors.As(err, &re):
		return re
	case errors.As(err, &tokErr), errors.As(err, &retrieve):
		hint = "the identity provider gave no OAuth token (check --sasl-oauth-token-endpoint, --sasl-oauth-client-id and the client secret)"
	case errors.As(err, &rejected):
		hint = "the broker rejected the OAuth token (its signature, issuer, audience or expiry; the broker's log says which)"
	case errors.As(err, &remote) && remote.Op == "remote error" && strings.HasPrefix(remote.Err.Error(), "tls: "):
		// The broker's TLS alert: about this client's certificate.
		hint = "the broker did not accept this client's certificate (check --tls-cert and --tls-key: the broker's listener may require one, signed by a CA it trusts)"
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid):
		hint = "this client does not trust the broker's certificate (check --tls-ca)"
	case errors.As(err, &record), strings.Contains(err.Error(), "plaintext connection speaking to a tls endpoint"):
		hint = "the broker's listener and this client disagree about TLS (check --tls and the port)"
	case errors.As(err, &eof):
		hint = "the broker closed the connection at once: its listener and this client disagree about TLS or SASL (check --tls, --sasl-mechanism and the port)"
	case errors.Is(err, kerr.SaslAuthenticationFailed):
		hint = "the broker rejected the SASL credentials (check --sasl-user and the password, or the OAuth token)"
	case errors.Is(err, kerr.UnsupportedSaslMechanism):
		hint = "the broker's listener does not offer --sasl-mechanism"
	case errors.Is(err, kerr.IllegalSaslState):
		hint = "the broker's listener expects another SASL exchange (check --sasl-mechanism)"
	default:
		return nil
	}
	return &RefusedError{Hint: hint, Err: err}
}

// CheckAccess asks a broker of cl for metadata and returns the refusal
// (Refused) when the brokers refuse this client: the same refusal three
// times in a row, half a second apart, so that a broker closing
// connections while it restarts is not taken for one. Anything else (an
// answer, no broker reachable, timeout passed) is nil: whether to wait for
// the brokers is the caller's to say.
func CheckAccess(ctx context.Context, cl *kgo.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for refusals := 1; ; refusals++ {
		// Metadata, not Ping: every request needs the connection's
		// authentication, but an ApiVersions request (Ping) may not.
		_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		re := Refused(err)
		if re == nil || ctx.Err() != nil {
			return nil
		}
		if refusals == 3 {
			return re
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(500 * time.Millisecond):
		}
	}
}
