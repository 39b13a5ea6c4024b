package server

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/graphtide/graphtide/internal/kafkaconn"
)

// accessTimeout bounds checkKafkaAccess.
const accessTimeout = 10 * time.Second

// checkKafkaAccess refuses to start when the brokers refuse serve's TLS or
// SASL settings (a *kafkaconn.RefusedError naming what to check), rather
// than retrying what cannot succeed; brokers that do not answer are
// waited for where they are used, as before.
func checkKafkaAccess(ctx context.Context, brokers []string, opts []kgo.Opt) error {
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(brokers...)}, opts...)...)
	if err != nil {
		return err
	}
	defer cl.Close()
	return kafkaconn.CheckAccess(ctx, cl, accessTimeout)
}
