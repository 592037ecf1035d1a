// dial: a Go client for the supervisor engine's tests; Go makes its own system calls.
//
// usage: dial [-timeout D] [-rounds N] tcp HOST:PORT[,HOST:PORT...] | unix PATH
//
// Dials with net.Dialer (timeout D, 0: none), then prints what the server
// sends.  On failure prints "dial: ERROR" on stderr and exits 1.
//
// With -rounds N, or a list of addresses (a host list, as etcd and most Go
// client libraries take): N rounds, each dialing the addresses in turn until
// one connects, which is closed at once; prints "round R connected ADDR
// after_ms=N" or "round R failed after_ms=N".  Exits 1 if a round failed.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 0, "dial timeout (0: none)")
	rounds := flag.Int("rounds", 0, "rounds over the address list (0: one dial, then read)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: dial [-timeout D] [-rounds N] tcp HOST:PORT[,HOST:PORT...] | unix PATH")
		os.Exit(2)
	}
	d := net.Dialer{Timeout: *timeout}
	if *rounds > 0 || strings.Contains(flag.Arg(1), ",") {
		os.Exit(dialRounds(d, flag.Arg(0), strings.Split(flag.Arg(1), ","), *rounds))
	}
	start := time.Now()
	conn, err := d.Dial(flag.Arg(0), flag.Arg(1))
	if err != nil {
		fmt.Fprintf(os.Stderr, "dial: %v (after %d ms)\n", err, time.Since(start).Milliseconds())
		os.Exit(1)
	}
	fmt.Printf("connected after_ms=%d\n", time.Since(start).Milliseconds())
	if _, err := io.Copy(os.Stdout, conn); err != nil {
		fmt.Fprintf(os.Stderr, "dial: read: %v\n", err)
		os.Exit(1)
	}
	conn.Close()
}

// dialRounds dials the addresses in turn, round after round; 1 if a round failed.
func dialRounds(d net.Dialer, network string, addrs []string, rounds int) int {
	status := 0
	if rounds == 0 {
		rounds = 1
	}
	start := time.Now()
	for r := 1; r <= rounds; r++ {
		connected := false
		for _, a := range addrs {
			conn, err := d.Dial(network, a)
			if err != nil {
				fmt.Fprintf(os.Stderr, "dial: %v\n", err)
				continue
			}
			conn.Close()
			fmt.Printf("round %d connected %s after_ms=%d\n", r, a, time.Since(start).Milliseconds())
			connected = true
			break
		}
		if !connected {
			fmt.Printf("round %d failed after_ms=%d\n", r, time.Since(start).Milliseconds())
			status = 1
		}
	}
	return status
}
