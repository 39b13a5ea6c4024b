package bench

import (
	"math/rand/v2"
	"time"
)

// Payment is one event of a payments stream: an amount from Src to Dst at
// Time (Unix µs).
type Payment struct {
	Src, Dst uint64
	Amount   float64
	Time     int64
}

// PayeesPerAccount is how many regular payees each account of
// PaymentStream has.
const PayeesPerAccount = 8

// PaymentsSpan is the event time PaymentStream covers.
const PaymentsSpan = 30 * 24 * time.Hour

// PaymentsStart is PaymentStream's first event time (Unix µs):
// 2026-11-01T00:00:00Z.
const PaymentsStart = int64(1793491200) * 1e6

// PaymentStream is n payments among accounts accounts over PaymentsSpan
// of event time, in time order, amounts of 0.01..1,000.00, deterministic
// by seed. Each account has PayeesPerAccount regular payees: three
// payments in four go to one of the payer's, the rest to a random account,
// so pairs repeat (bench ingest and bench serve compare edge aggregates on
// it).
func PaymentStream(n, accounts int, seed uint64) []Payment {
	rng := rand.New(rand.NewPCG(seed, 42))
	na := uint64(accounts)
	payees := make([]uint64, accounts*PayeesPerAccount)
	for i := range payees {
		payees[i] = rng.Uint64N(na)
	}
	step := PaymentsSpan.Microseconds() / int64(max(n, 1))
	out := make([]Payment, n)
	for i := range out {
		src := rng.Uint64N(na)
		dst := rng.Uint64N(na)
		if rng.IntN(4) != 0 {
			dst = payees[src*PayeesPerAccount+rng.Uint64N(PayeesPerAccount)]
		}
		out[i] = Payment{Src: src, Dst: dst, Amount: float64(1+rng.IntN(100_000)) / 100, Time: PaymentsStart + int64(i)*step}
	}
	return out
}
