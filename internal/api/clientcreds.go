package api

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"
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
