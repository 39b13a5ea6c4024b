package kafkaconn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestValidate(t *testing.T) {
	t.Setenv(ClientSecretEnv, "") // set below where a case needs it
	os.Unsetenv(ClientSecretEnv)
	const secret = "s3cret-never-shown"
	oauth := func(o Options) Options { o.SASLMechanism = "oauthbearer"; return o }
	for _, tc := range []struct {
		o      Options
		envSec bool   // ClientSecretEnv set
		want   string // "" = valid
	}{
		{o: Options{}},
		{o: Options{TLS: true, TLSCA: "ca.pem"}},
		{o: Options{TLS: true, TLSCert: "c.pem", TLSKey: "k.pem"}},
		{o: Options{SASLMechanism: "scram-sha-512", SASLUser: "u", SASLPassword: secret}},
		{o: Options{SASLMechanism: "gssapi", SASLUser: "u"}, want: `--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512, oauthbearer; got "gssapi"`},
		{o: Options{SASLMechanism: "plain"}, want: "--sasl-user is required with --sasl-mechanism"},
		{o: Options{SASLUser: "u"}, want: "--sasl-user and --sasl-password need --sasl-mechanism"},
		{o: Options{SASLPassword: secret}, want: "--sasl-user and --sasl-password need --sasl-mechanism"},
		{o: Options{TLSCA: "ca.pem"}, want: "--tls-ca needs --tls"},
		{o: Options{TLSCert: "c.pem", TLSKey: "k.pem"}, want: "needs --tls"},
		{o: Options{TLS: true, TLSCert: "c.pem"}, want: "--tls-cert and --tls-key go together: give both, or neither"},
		{o: Options{TLS: true, TLSKey: "k.pem"}, want: "--tls-cert and --tls-key go together: give both, or neither"},
		// OAUTHBEARER.
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthClientID: "c", OAuthClientSecretFile: "s", OAuthScope: "kafka", OAuthExtensions: []string{"logicalCluster=lkc-1"}})},
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthClientID: "c"}), envSec: true},
		{o: oauth(Options{OAuthTokenURL: "http://127.0.0.1:8080/token", OAuthClientID: "c", OAuthClientSecret: secret})},
		{o: oauth(Options{OAuthTokenURL: "http://localhost/token", OAuthClientID: "c", OAuthClientSecret: secret})},
		{o: oauth(Options{OAuthTokenFile: "/var/run/secrets/token"})},
		{o: oauth(Options{}), want: "--sasl-mechanism oauthbearer needs --sasl-oauth-token-endpoint (the client-credentials grant) or --sasl-oauth-token-file"},
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthClientSecret: secret}), want: "--sasl-oauth-token-endpoint needs --sasl-oauth-client-id"},
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthClientID: "c"}), want: "--sasl-oauth-token-endpoint needs the client secret: --sasl-oauth-client-secret-file FILE or " + ClientSecretEnv},
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthClientID: "c", OAuthClientSecretFile: "s"}), envSec: true, want: "the OAuth client secret comes from --sasl-oauth-client-secret-file or " + ClientSecretEnv + ": give one, not both"},
		{o: oauth(Options{OAuthTokenURL: "http://idp.example/token", OAuthClientID: "c", OAuthClientSecret: secret}), want: "--sasl-oauth-token-endpoint http://idp.example/token: http would send the client secret in clear beyond this machine; use https"},
		{o: oauth(Options{OAuthTokenURL: "idp.example/token", OAuthClientID: "c", OAuthClientSecret: secret}), want: `--sasl-oauth-token-endpoint must be an https:// URL, got "idp.example/token"`},
		{o: oauth(Options{OAuthTokenURL: "https://idp.example/token", OAuthTokenFile: "t"}), want: "--sasl-oauth-token-endpoint and --sasl-oauth-token-file are two ways to get a token: give one"},
		{o: oauth(Options{OAuthTokenFile: "t", OAuthScope: "kafka"}), want: "go with --sasl-oauth-token-endpoint, not --sasl-oauth-token-file"},
		{o: oauth(Options{OAuthTokenFile: "t", SASLUser: "u"}), want: "--sasl-user and --sasl-password are for plain and scram-*"},
		{o: oauth(Options{OAuthTokenFile: "t", OAuthExtensions: []string{"auth=x"}}), want: `--sasl-oauth-extension must look like key=value, the key letters (not "auth") and the value printable ASCII; got "auth=x"`},
		{o: oauth(Options{OAuthTokenFile: "t", OAuthExtensions: []string{"k1=x"}}), want: `got "k1=x"`},
		{o: oauth(Options{OAuthTokenFile: "t", OAuthExtensions: []string{"k=\x01"}}), want: "--sasl-oauth-extension must look like key=value"},
		{o: oauth(Options{OAuthTokenFile: "t", OAuthExtensions: []string{"novalue"}}), want: "--sasl-oauth-extension must look like key=value"},
		{o: Options{OAuthTokenFile: "t"}, want: "--sasl-oauth-token-file needs --sasl-mechanism oauthbearer"},
		{o: Options{SASLMechanism: "plain", SASLUser: "u", OAuthClientID: "c"}, want: "--sasl-oauth-client-id needs --sasl-mechanism oauthbearer, not plain"},
	} {
		if tc.envSec {
			t.Setenv(ClientSecretEnv, secret)
		} else {
			os.Unsetenv(ClientSecretEnv)
		}
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), secret) {
			t.Errorf("the error shows the secret: %v", err)
		}
	}
}

// writeCA writes a self-signed CA certificate as PEM.
func writeCA(t *testing.T, path string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestClientOpts(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	writeCA(t, ca)
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		o    Options
		n    int    // options
		want string // error
	}{
		{Options{}, 0, ""},
		{Options{TLS: true}, 1, ""},
		{Options{TLS: true, TLSCA: ca, SASLMechanism: "plain", SASLUser: "u", SASLPassword: "p"}, 2, ""},
		{Options{SASLMechanism: "scram-sha-256", SASLUser: "u"}, 1, ""},
		{Options{TLS: true, TLSCA: filepath.Join(dir, "missing.pem")}, 0, "--tls-ca: open "},
		{Options{TLS: true, TLSCA: junk}, 0, "--tls-ca: " + junk + " holds no PEM certificate"},
	} {
		opts, err := tc.o.ClientOpts()
		switch {
		case tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)):
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		case tc.want == "" && (err != nil || len(opts) != tc.n):
			t.Errorf("%+v: %d options, %v; want %d", tc.o, len(opts), err, tc.n)
		}
	}
}

func TestAddFlags(t *testing.T) {
	var o Options
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	o.AddFlags(fs, []string{"b:1"}, "brokers")
	if err := fs.Parse([]string{"--brokers", "a:1,a:2", "--tls", "--sasl-mechanism", "plain", "--sasl-user", "u"}); err != nil {
		t.Fatal(err)
	}
	if len(o.Brokers) != 2 || !o.TLS || o.SASLMechanism != "plain" || o.SASLUser != "u" {
		t.Errorf("parsed %+v", o)
	}
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
}
