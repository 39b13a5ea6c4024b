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
	for _, tc := range []struct {
		o    Options
		want string // "" = valid
	}{
		{Options{}, ""},
		{Options{TLS: true, TLSCA: "ca.pem"}, ""},
		{Options{SASLMechanism: "scram-sha-512", SASLUser: "u", SASLPassword: "p"}, ""},
		{Options{SASLMechanism: "gssapi", SASLUser: "u"}, `--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512; got "gssapi"`},
		{Options{SASLMechanism: "plain"}, "--sasl-user is required with --sasl-mechanism"},
		{Options{SASLUser: "u"}, "--sasl-user and --sasl-password need --sasl-mechanism"},
		{Options{SASLPassword: "secret"}, "--sasl-user and --sasl-password need --sasl-mechanism"},
		{Options{TLSCA: "ca.pem"}, "--tls-ca needs --tls"},
	} {
		err := tc.o.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
		if err != nil && tc.o.SASLPassword != "" && strings.Contains(err.Error(), tc.o.SASLPassword) {
			t.Errorf("the error shows the password: %v", err)
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
