// Package kafkaconn is how every graphtide command that talks to Kafka
// (serve, produce, gen) is told to connect: the brokers, TLS and SASL, as
// the same flags with the same checks, turned into franz-go options.
//
// What it promises: Validate accepts only settings ClientOpts can honour
// and names the flag and what is allowed when it refuses; ClientOpts never
// holds a secret in an error message.
package kafkaconn

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Options are the connection settings.
type Options struct {
	Brokers       []string
	TLS           bool
	TLSCA         string // PEM file of the CA of the brokers' certificates; "" = system roots
	SASLMechanism string // "", plain, scram-sha-256 or scram-sha-512
	SASLUser      string
	SASLPassword  string
}

// Mechanisms are the SASL mechanisms Options accept.
var Mechanisms = []string{"plain", "scram-sha-256", "scram-sha-512"}

// AddFlags adds --brokers (with the given default and help) and the TLS
// and SASL flags.
func (o *Options) AddFlags(fs *pflag.FlagSet, brokers []string, brokersHelp string) {
	fs.StringSliceVar(&o.Brokers, "brokers", brokers, brokersHelp)
	fs.BoolVar(&o.TLS, "tls", false, "connect to the brokers with TLS")
	fs.StringVar(&o.TLSCA, "tls-ca", "", "PEM file of the CA that signs the brokers' certificates (default: system roots)")
	fs.StringVar(&o.SASLMechanism, "sasl-mechanism", "", "SASL mechanism: plain, scram-sha-256 or scram-sha-512")
	fs.StringVar(&o.SASLUser, "sasl-user", "", "SASL user")
	fs.StringVar(&o.SASLPassword, "sasl-password", "", "SASL password (prefer GRAPHTIDE_SASL_PASSWORD)")
}

// Validate checks the TLS and SASL settings (not the brokers: whether
// they are required is the command's to say).
func (o *Options) Validate() error {
	switch o.SASLMechanism {
	case "", "plain", "scram-sha-256", "scram-sha-512":
	default:
		return fmt.Errorf("--sasl-mechanism must be one of: plain, scram-sha-256, scram-sha-512; got %q", o.SASLMechanism)
	}
	if o.SASLMechanism != "" && o.SASLUser == "" {
		return errors.New("--sasl-user is required with --sasl-mechanism")
	}
	if o.SASLMechanism == "" && (o.SASLUser != "" || o.SASLPassword != "") {
		return errors.New("--sasl-user and --sasl-password need --sasl-mechanism")
	}
	if o.TLSCA != "" && !o.TLS {
		return errors.New("--tls-ca needs --tls")
	}
	return nil
}

// ClientOpts turns the TLS and SASL settings into franz-go options (the
// brokers are the caller's: kgo.SeedBrokers(o.Brokers...)).
func (o *Options) ClientOpts() ([]kgo.Opt, error) {
	var opts []kgo.Opt
	if o.TLS {
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
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch o.SASLMechanism {
	case "plain":
		opts = append(opts, kgo.SASL(plain.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsMechanism()))
	case "scram-sha-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha256Mechanism()))
	case "scram-sha-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: o.SASLUser, Pass: o.SASLPassword}.AsSha512Mechanism()))
	}
	return opts, nil
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
