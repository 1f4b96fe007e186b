// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package netns

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is both sides: Main inside the namespace, and the probe
// program Main runs there.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == Arg {
		os.Exit(Main(os.Args[2:]))
	}
	if addrs := os.Getenv("NETNS_PROBE"); addrs != "" {
		os.Exit(probe(strings.Split(addrs, ",")))
	}
	os.Exit(m.Run())
}

// probe, inside the namespace: reads the target, tries the other address,
// and listens on every interface as Karpenter does, printing what it saw.
func probe(addrs []string) int {
	target, other := addrs[0], addrs[1]
	resp, err := http.Get("http://" + target)
	if err != nil {
		fmt.Println("target:", err)
		return 1
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("target: %s\n", b)
	if c, err := net.DialTimeout("tcp", other, time.Second); err == nil {
		c.Close()
		fmt.Println("other: reached")
	} else {
		fmt.Println("other: unreachable")
	}
	l, err := net.Listen("tcp", other[strings.LastIndex(other, ":"):])
	if err != nil {
		fmt.Println("listen:", err)
		return 1
	}
	defer l.Close()
	fmt.Println("listening on", l.Addr())
	return 0
}

// A program in its own namespace reaches the one address it is given and
// no other, and what it listens on, on every interface, stays inside: the
// same port on this machine's loopback is still free.
func TestProgramReachesOnlyItsTarget(t *testing.T) {
	target := serve(t, "apiserver")
	other := serve(t, "other")
	self, err := os.Executable()
	require.NoError(t, err)
	var out bytes.Buffer
	env := append(os.Environ(), "NETNS_PROBE="+target+","+other)
	p, err := Start(self, target, "", []string{self}, env, &out)
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		t.Skipf("no network namespaces for this user here: %v", err)
	}
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err, ended := p.Exited(); ended {
			require.NoError(t, err, "the probe: %s", out.String())
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the probe did not end: %s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	assert.NoError(t, p.Stop(ctx, time.Second))
	assert.Contains(t, out.String(), "target: apiserver")
	assert.Contains(t, out.String(), "other: unreachable")
	assert.Contains(t, out.String(), "listening on [::]:"+other[strings.LastIndex(other, ":")+1:])
	_, err = os.Stat(p.dir)
	assert.True(t, os.IsNotExist(err), "the relay's directory is removed")
}

// serve answers body on a free port of 127.0.0.1 until the test ends.
func serve(t *testing.T, body string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, body) })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

func TestBadTargetIsRefused(t *testing.T) {
	_, err := Start("/bin/true", "0.0.0.0:80", "", []string{"/bin/true"}, nil, io.Discard)
	assert.ErrorContains(t, err, "not an address on 127.0.0.1")
}
