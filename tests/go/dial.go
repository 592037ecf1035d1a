// dial: a Go client for the supervisor engine's tests; Go makes its own system calls.
//
// usage: dial [-timeout D] tcp HOST:PORT | unix PATH
//
// Dials with net.Dialer (timeout D, 0: none), then prints what the server
// sends.  On failure prints "dial: ERROR" on stderr and exits 1.
package main

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func main() {
	timeout := flag.Duration("timeout", 0, "dial timeout (0: none)")
	flag.Parse()
	if flag.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: dial [-timeout D] tcp HOST:PORT | unix PATH")
		os.Exit(2)
	}
	d := net.Dialer{Timeout: *timeout}
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
