//go:build linux

package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse/store/storetest"
)

// A listener that stops serving under `clearhouse serve` ends it with exit status 1,
// naming the listener (serveUntilDone's exit path): here the web server's socket is
// shut down under it once serve says where it listens. Linux only: shutdown(2) on a
// listening socket makes its accept fail there (EINVAL), as a listener that stops
// serving.
func TestServeExitsOneWhenItsListenerFails(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	exited := make(chan int, 1)
	go func() {
		exited <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", storetest.MigratedFile(t), "--auction-every", "0"},
			strings.NewReader(""), &out, &errOut)
	}()
	var addr string
	for deadline := time.Now().Add(time.Minute); addr == ""; time.Sleep(10 * time.Millisecond) {
		select {
		case code := <-exited:
			t.Fatalf("serve exited %d before serving: %s", code, errOut.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not say where it listens within a minute: %q", out.String())
		}
		if _, after, ok := strings.Cut(out.String(), "serving on http://"); ok {
			addr, _, _ = strings.Cut(after, " ")
		}
	}
	shutDownListener(t, addr)
	select {
	case code := <-exited:
		if code != 1 || !strings.Contains(errOut.String(), "clearhouse: http server on 127.0.0.1:0") {
			t.Fatalf("serve with its listener failed: exit %d, stderr %q; want 1 naming the http server", code, errOut.String())
		}
	case <-time.After(time.Minute):
		cancel() // an interrupt: serve shuts down with 0, so the test fails either way
		t.Fatalf("serve goes on a minute after its listener failed (exit %d on interrupt)", <-exited)
	}
}

// shutDownListener shuts down the socket of this process that listens on addr
// (host:port), leaving its descriptor to its owner: accept fails on it from then on.
func shutDownListener(t *testing.T, addr string) {
	t.Helper()
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	for fd := 3; fd < int(min(lim.Cur, 1<<16)); fd++ {
		sa, err := syscall.Getsockname(fd)
		if in, ok := sa.(*syscall.SockaddrInet4); err != nil || !ok || in.Port != port {
			continue
		}
		// The listener, not a connection accepted on the same port.
		if on, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ACCEPTCONN); err != nil || on != 1 {
			continue
		}
		if err := syscall.Shutdown(fd, syscall.SHUT_RDWR); err != nil {
			t.Fatalf("shutting down the listener on %s: %v", addr, err)
		}
		return
	}
	t.Fatalf("no socket of this process listens on %s", addr)
}
