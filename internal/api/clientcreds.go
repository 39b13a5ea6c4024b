package api

import (
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ClientToken reads a client's bearer token from tokenFile (the
// --token-file flag) or GRAPHTIDE_HTTP_TOKEN ("" when neither is given):
// a bare token, or one line of serve's --http-token-file format (TOKEN
// SCOPES). Giving both is an error.
func ClientToken(tokenFile string) (string, error) {
	env, fromEnv := os.LookupEnv("GRAPHTIDE_HTTP_TOKEN")
	source, data := "GRAPHTIDE_HTTP_TOKEN", []byte(env)
	switch {
	case fromEnv && tokenFile != "":
		return "", errors.New("the token comes from --token-file or GRAPHTIDE_HTTP_TOKEN: give one, not both")
	case fromEnv:
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", fmt.Errorf("--token-file: %w", err)
		}
		source, data = "--token-file "+tokenFile, b
	default:
		return "", nil
	}
	tokens, err := ParseTokens(source, data)
	if err != nil {
		return "", err
	}
	if len(tokens) != 1 {
		return "", fmt.Errorf("%s holds %d tokens: give the client one", source, len(tokens))
	}
	return tokens[0].Secret, nil
}

// ServerCA reads the PEM file of the CA that signs an https server's
// certificate (the --server-ca flag; nil when path is "": the system
// roots).
func ServerCA(path string) (*x509.CertPool, error) {
	if path == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--server-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--server-ca: %s holds no PEM certificate", path)
	}
	return pool, nil
}

// ServerFlags are the flags of a command that talks to a running serve
// (query --server, write): its URL, its bearer token and CA, and how long
// to wait for it.
type ServerFlags struct {
	Server    string
	TokenFile string
	ServerCA  string
	Timeout   time.Duration
}

// AddFlags adds --server (with its default and usage), --token-file,
// --server-ca and --timeout.
func (f *ServerFlags) AddFlags(fs *pflag.FlagSet, server, usage string) {
	fs.StringVar(&f.Server, "server", server, usage)
	fs.StringVar(&f.TokenFile, "token-file", "", "file holding the server's bearer token (or GRAPHTIDE_HTTP_TOKEN)")
	fs.StringVar(&f.ServerCA, "server-ca", "", "PEM file of the CA that signs an https --server's certificate (default: system roots)")
	fs.DurationVar(&f.Timeout, "timeout", 30*time.Second, "give up on the server after this long")
}

// Check refuses a --server that is not an http(s) URL and a --timeout
// that is not positive, and drops the URL's trailing slashes.
func (f *ServerFlags) Check() error {
	u, err := url.Parse(f.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--server must be an http:// or https:// URL such as http://127.0.0.1:9464, got %q", f.Server)
	}
	f.Server = strings.TrimRight(f.Server, "/")
	if f.Timeout <= 0 {
		return fmt.Errorf("--timeout must be positive, got %v", f.Timeout)
	}
	return nil
}

// ClientOptions reads the token (--token-file or GRAPHTIDE_HTTP_TOKEN)
// and the CA (--server-ca).
func (f *ServerFlags) ClientOptions() (ClientOptions, error) {
	token, err := ClientToken(f.TokenFile)
	if err != nil {
		return ClientOptions{}, err
	}
	cas, err := ServerCA(f.ServerCA)
	if err != nil {
		return ClientOptions{}, err
	}
	return ClientOptions{Token: token, RootCAs: cas, Timeout: f.Timeout}, nil
}
