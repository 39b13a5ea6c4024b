// Package kafkaconn is how every graphtide command that talks to Kafka
// (serve, produce, gen, bench kafka) is told to connect: the brokers, TLS
// (with a client certificate for clusters that require one) and SASL
// (PLAIN, SCRAM, OAUTHBEARER), as the same flags with the same checks,
// turned into franz-go options.
//
// What it promises: Validate accepts only settings ClientOpts can honour
// and names the flag and what is allowed when it refuses; no secret (a
// password, an OAuth client secret or token, a private key) is ever held
// in an error message, and none needs to be on the command line: each
// comes from a file or a GRAPHTIDE_* environment variable.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// ClientSecretEnv is the environment variable that may hold the OAuth
// client secret instead of --sasl-oauth-client-secret-file.
const ClientSecretEnv = "GRAPHTIDE_SASL_OAUTH_CLIENT_SECRET"

// Options are the connection settings.
type Options struct {
	Brokers       []string
	TLS           bool
	TLSCA         string // PEM file of the CA of the brokers' certificates; "" = system roots
	TLSCert       string // PEM file of the client certificate (chain) for brokers that require one
	TLSKey        string // PEM file of TLSCert's private key
	SASLMechanism string // "", plain, scram-sha-256, scram-sha-512 or oauthbearer
	SASLUser      string
	SASLPassword  string

	// OAUTHBEARER: either the client-credentials grant against TokenURL
	// (what Kafka's own clients do: sasl.oauthbearer.token.endpoint.url),
	// or a token a platform keeps in TokenFile.
	OAuthTokenURL         string
	OAuthClientID         string
	OAuthClientSecretFile string
	// OAuthClientSecret is the client secret when set in code; from flags
	// it comes from OAuthClientSecretFile or ClientSecretEnv instead.
	OAuthClientSecret string
	OAuthScope        string   // scopes to ask for, separated by spaces or commas
	OAuthTokenFile    string   // a token file, read at every authentication
	OAuthExtensions   []string // SASL extensions as key=value (e.g. a cloud's logicalCluster)
}

// Mechanisms are the SASL mechanisms Options accept.
var Mechanisms = []string{"plain", "scram-sha-256", "scram-sha-512", "oauthbearer"}

// AddFlags adds --brokers (with the given default and help) and the TLS
// and SASL flags.
func (o *Options) AddFlags(fs *pflag.FlagSet, brokers []string, brokersHelp string) {
	fs.StringSliceVar(&o.Brokers, "brokers", brokers, brokersHelp)
	fs.BoolVar(&o.TLS, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "PEM file of the CA that signs the brokers' certificates (default: system roots)")
	fs.StringVar(&o.TLSCert, "tls-cert", "", "PEM file of the client certificate (chain) for brokers that require one (mTLS; needs --tls-key; re-read when it changes)")
	fs.StringVar(&o.TLSKey, "tls-key", "", "PEM file of the unencrypted private key of --tls-cert")
	fs.StringVar(&o.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: "+strings.Join(Mechanisms, ", "))
	fs.StringVar(&o.SASLUser, "sasl-user", "", "SASL user (plain, scram-*)")
	fs.StringVar(&o.SASLPassword, "sasl-password", "", "SASL password (prefer GRAPHTIDE_SASL_PASSWORD: a flag shows in ps)")
	fs.StringVar(&o.OAuthTokenURL, "sasl-oauth-token-endpoint", "", "oauthbearer: the identity provider's OAuth 2.0 token endpoint; tokens come by the client-credentials grant and are renewed before they expire (https, or http on loopback)")
	fs.StringVar(&o.OAuthClientID, "sasl-oauth-client-id", "", "oauthbearer: the client id of the client-credentials grant")
	fs.StringVar(&o.OAuthClientSecretFile, "sasl-oauth-client-secret-file", "", "oauthbearer: file holding the client secret (or "+ClientSecretEnv+")")
	fs.StringVar(&o.OAuthScope, "sasl-oauth-scope", "", "oauthbearer: the scopes to ask the token endpoint for, separated by spaces or commas")
	fs.StringVar(&o.OAuthTokenFile, "sasl-oauth-token-file", "", "oauthbearer: file holding a token that the platform renews (read at every authentication), instead of a token endpoint")
	fs.StringArrayVar(&o.OAuthExtensions, "sasl-oauth-extension", nil, "oauthbearer: a SASL extension key=value sent with the token, as some clusters require (repeatable)")
}

// Validate checks the TLS and SASL settings (not the brokers: whether
// they are required is the command's to say).
func (o *Options) Validate() error {
	if !slices.Contains(append([]string{""}, Mechanisms...), o.SASLMechanism) {
		return fmt.Errorf("--sasl-mechanism must be one of: %s; got %q", strings.Join(Mechanisms, ", "), o.SASLMechanism)
	}
	oauthFlags := o.oauthFlagsGiven()
	switch o.SASLMechanism {
	case "":
		if o.SASLUser != "" || o.SASLPassword != "" {
			return errors.New("--sasl-user and --sasl-password need --sasl-mechanism")
		}
		if oauthFlags != "" {
			return fmt.Errorf("%s needs --sasl-mechanism oauthbearer", oauthFlags)
		}
	case "oauthbearer":
		if err := o.validateOAuth(); err != nil {
			return err
		}
	default:
		if o.SASLUser == "" {
			return errors.New("--sasl-user is required with --sasl-mechanism")
		}
		if oauthFlags != "" {
			return fmt.Errorf("%s needs --sasl-mechanism oauthbearer, not %s", oauthFlags, o.SASLMechanism)
		}
	}
	for flag, v := range map[string]string{"--tls-ca": o.TLSCA, "--tls-cert": o.TLSCert, "--tls-key": o.TLSKey} {
		if v != "" && !o.TLS {
			return fmt.Errorf("%s needs --tls", flag)
		}
	}
	if (o.TLSCert == "") != (o.TLSKey == "") {
		return errors.New("--tls-cert and --tls-key go together: give both, or neither")
	}
	return nil
}

// oauthFlagsGiven names the first OAUTHBEARER flag given ("" if none).
func (o *Options) oauthFlagsGiven() string {
	for _, f := range []struct {
		name string
		set  bool
	}{
		{"--sasl-oauth-token-endpoint", o.OAuthTokenURL != ""},
		{"--sasl-oauth-client-id", o.OAuthClientID != ""},
		{"--sasl-oauth-client-secret-file", o.OAuthClientSecretFile != ""},
		{"--sasl-oauth-scope", o.OAuthScope != ""},
		{"--sasl-oauth-token-file", o.OAuthTokenFile != ""},
		{"--sasl-oauth-extension", len(o.OAuthExtensions) > 0},
	} {
		if f.set {
			return f.name
		}
	}
	return ""
}

func (o *Options) validateOAuth() error {
	if o.SASLUser != "" || o.SASLPassword != "" {
		return errors.New("--sasl-user and --sasl-password are for plain and scram-*: oauthbearer takes --sasl-oauth-token-endpoint (with --sasl-oauth-client-id and a secret) or --sasl-oauth-token-file")
	}
	for _, e := range o.OAuthExtensions {
		if _, _, err := parseExtension(e); err != nil {
			return err
		}
	}
	_, envSecret := os.LookupEnv(ClientSecretEnv)
	switch {
	case o.OAuthTokenURL != "" && o.OAuthTokenFile != "":
		return errors.New("--sasl-oauth-token-endpoint and --sasl-oauth-token-file are two ways to get a token: give one")
	case o.OAuthTokenFile != "":
		if o.OAuthClientID != "" || o.OAuthClientSecretFile != "" || o.OAuthScope != "" {
			return errors.New("--sasl-oauth-client-id, --sasl-oauth-client-secret-file and --sasl-oauth-scope go with --sasl-oauth-token-endpoint, not --sasl-oauth-token-file")
		}
		return nil
	case o.OAuthTokenURL == "":
		return errors.New("--sasl-mechanism oauthbearer needs --sasl-oauth-token-endpoint (the client-credentials grant) or --sasl-oauth-token-file")
	}
	if err := checkTokenURL(o.OAuthTokenURL); err != nil {
		return err
	}
	if o.OAuthClientID == "" {
		return errors.New("--sasl-oauth-token-endpoint needs --sasl-oauth-client-id")
	}
	if o.OAuthClientSecret != "" {
		return nil // set in code
	}
	switch {
	case envSecret && o.OAuthClientSecretFile != "":
		return fmt.Errorf("the OAuth client secret comes from --sasl-oauth-client-secret-file or %s: give one, not both", ClientSecretEnv)
	case !envSecret && o.OAuthClientSecretFile == "":
		return fmt.Errorf("--sasl-oauth-token-endpoint needs the client secret: --sasl-oauth-client-secret-file FILE or %s", ClientSecretEnv)
	}
	return nil
}

// checkTokenURL accepts https, and http only to a loopback host (a client
// secret crosses the network in clear over http).
func checkTokenURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return fmt.Errorf("--sasl-oauth-token-endpoint must be an https:// URL, got %q", raw)
	}
	if u.Scheme == "http" {
		host := u.Hostname()
		ip := net.ParseIP(host)
		if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--sasl-oauth-token-endpoint %s: http would send the client secret in clear beyond this machine; use https", raw)
		}
	}
	return nil
}

// parseExtension reads a SASL extension key=value (RFC 7628, as Kafka
// checks them: a key of letters, not "auth"; a value of printable ASCII).
func parseExtension(s string) (key, value string, err error) {
	key, value, ok := strings.Cut(s, "=")
	valid := ok && key != "" && key != "auth" && value != ""
	for _, c := range key {
		valid = valid && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z')
	}
	for _, c := range value {
		valid = valid && (c >= 0x21 && c <= 0x7e || c == ' ' || c == '\t')
	}
	if !valid {
		return "", "", fmt.Errorf("--sasl-oauth-extension must look like key=value, the key letters (not \"auth\") and the value printable ASCII; got %q", s)
	}
	return key, value, nil
}

// ClientOpts turns the TLS and SASL settings into franz-go options (the
// brokers are the caller's: kgo.SeedBrokers(o.Brokers...)). It reads the
// files the settings name, so that a missing or bad one is refused now.
func (o *Options) ClientOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if o.TLS {
		cfg, err := o.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch o.SASLMechanism {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha512Mechanism()))
	case "oauthbearer":
		auth, err := o.oauthAuth()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.SASL(newOAuthMechanism(auth)))
	}
	return opts, nil
}

func (o *Options) tlsConfig() (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.TLSCA != "" {
		pem, err := os.ReadFile(o.TLSCA)
		if err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-ca: %s holds no PEM certificate", o.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if o.TLSCert != "" {
		l, err := newCertLoader(o.TLSCert, o.TLSKey)
		if err != nil {
			return nil, err
		}
		cfg.GetClientCertificate = l.get
	}
	return cfg, nil
}

// oauthAuth is the OAUTHBEARER credentials function: a token from the
// endpoint (cached, renewed before expiry) or from the token file.
func (o *Options) oauthAuth() (func(context.Context) (oauth.Auth, error), error) {
	ext := map[string]string{}
	for _, e := range o.OAuthExtensions {
		k, v, err := parseExtension(e)
		if err != nil {
			return nil, err
		}
		ext[k] = v
	}
	if o.OAuthTokenFile != "" {
		path := o.OAuthTokenFile
		if _, err := readTokenFile(path); err != nil {
			return nil, err
		}
		return func(context.Context) (oauth.Auth, error) {
			tok, err := readTokenFile(path)
			return oauth.Auth{Token: tok, Extensions: ext}, err
		}, nil
	}
	secret, err := o.clientSecret()
	if err != nil {
		return nil, err
	}
	src := newTokenSource(o.OAuthTokenURL, o.OAuthClientID, secret, scopes(o.OAuthScope))
	return func(ctx context.Context) (oauth.Auth, error) {
		tok, err := src.token(ctx)
		return oauth.Auth{Token: tok, Extensions: ext}, err
	}, nil
}

// clientSecret is the OAuth client secret: set in code, from the file, or
// from ClientSecretEnv.
func (o *Options) clientSecret() (string, error) {
	secret := o.OAuthClientSecret
	from := "the client secret"
	switch env, ok := os.LookupEnv(ClientSecretEnv); {
	case secret != "":
	case o.OAuthClientSecretFile != "":
		b, err := os.ReadFile(o.OAuthClientSecretFile)
		if err != nil {
			return "", fmt.Errorf("--sasl-oauth-client-secret-file: %w", err)
		}
		secret, from = string(b), "--sasl-oauth-client-secret-file "+o.OAuthClientSecretFile
	case ok:
		secret, from = env, ClientSecretEnv
	}
	secret = strings.TrimSpace(secret)
	if secret == "" {
		return "", fmt.Errorf("%s is empty", from)
	}
	return secret, nil
}

// readTokenFile reads an OAuth token file: one token, surrounding white
// space ignored.
func readTokenFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--sasl-oauth-token-file: %w", err)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("--sasl-oauth-token-file %s is empty", path)
	}
	return tok, nil
}

// scopes splits --sasl-oauth-scope at spaces and commas.
func scopes(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' })
}

// Header is the value of r's first header named key ("" when it has
// none): the headers graphtide's own records carry (the graph, a write's
// request id, an alert's ID).
func Header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// EnsureTopic creates topic with partitions partitions (and the brokers'
// default replication) unless it exists; nil when it exists either way.
func EnsureTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, partitions, -1, nil, topic)
	if err == nil {
		err = resp.Error()
	}
	if errors.Is(err, kerr.TopicAlreadyExists) {
		return nil
	}
	return err
}
