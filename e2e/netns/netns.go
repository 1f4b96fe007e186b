// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

// Package netns runs a program in a network namespace of its own, with
// only a loopback interface, through which it reaches one TCP address of
// this machine's loopback (the apiserver) and nothing else.
//
// It exists for controllers that listen where they please: Karpenter
// binds its metrics and health endpoints to ":8080" and ":8081", every
// interface, with no flag for the address (autoscaler-facts §2.2). In a
// namespace of its own those
// listeners are unreachable from outside and never collide with another
// run's, while gpupool binds only to 127.0.0.1. The bridge is a Unix
// socket: a path in the filesystem crosses network namespaces where a
// TCP address does not.
package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Arg, as os.Args[1], makes the gpupool binary the namespace's first
// process (Main): the relay's far end, and the parent of the program.
const Arg = "__netns"

// Process is a program running in its own network namespace.
type Process struct {
	cmd   *exec.Cmd
	relay net.Listener
	dir   string // the relay's, removed at Stop ("": the caller's)
	done  chan error
}

// Start runs argv in a new network namespace, where target (a host:port on
// 127.0.0.1) reaches the same address on this machine. self is the gpupool
// binary (os.Executable), which runs Main inside the namespace. The program
// dies with gpupool.
//
// The relay's socket goes in dir, the caller's to remove; with dir "", in
// a temporary directory Stop removes.
func Start(self, target, dir string, argv []string, env []string, out io.Writer) (*Process, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil || host != "127.0.0.1" {
		return nil, fmt.Errorf("netns: target %q is not an address on 127.0.0.1", target)
	}
	own := ""
	if dir == "" {
		if own, err = os.MkdirTemp("", "gpupool-netns-"); err != nil {
			return nil, err
		}
		dir = own
	}
	sock := filepath.Join(dir, "s") // short: a socket path has 107 bytes
	if len(sock) >= 108 {
		// sun_path holds 108 bytes with its NUL.
		removeOwn(own)
		return nil, fmt.Errorf("netns: the relay socket's path %s is %d bytes, at most 107: set TMPDIR to a shorter directory", sock, len(sock))
	}
	l, err := net.Listen("unix", sock)
	if err != nil {
		removeOwn(own)
		return nil, err
	}
	p := &Process{relay: l, dir: own, done: make(chan error, 1)}
	go p.serve(target)
	args := append([]string{Arg, sock, target, "--"}, argv...)
	start := func(attr *syscall.SysProcAttr) error {
		attr.Setpgid, attr.Pdeathsig = true, syscall.SIGKILL
		p.cmd = exec.Command(self, args...)
		p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr, p.cmd.SysProcAttr = env, out, out, attr
		return p.cmd.Start()
	}
	err = start(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET})
	if errors.Is(err, syscall.EPERM) {
		// Not root: a user namespace lets an unprivileged user own a
		// network namespace (where the kernel allows it).
		uid, gid := os.Getuid(), os.Getgid()
		err = start(&syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET | syscall.CLONE_NEWUSER,
			UidMappings: []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
			GidMappings: []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}})
	}
	if err != nil {
		l.Close()
		removeOwn(own)
		return nil, fmt.Errorf("netns: starting %s in a network namespace of its own: %w", filepath.Base(argv[0]), err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	return p, nil
}

// serve relays each connection the namespace makes to target.
func (p *Process) serve(target string) {
	for {
		c, err := p.relay.Accept()
		if err != nil {
			return
		}
		go func() {
			up, err := net.DialTimeout("tcp", target, 5*time.Second)
			if err != nil {
				c.Close()
				return
			}
			pipe(c, up)
		}()
	}
}

// Exited returns the program's exit if it has ended, else nil.
func (p *Process) Exited() (error, bool) {
	select {
	case err := <-p.done:
		p.done <- err
		return err, true
	default:
		return nil, false
	}
}

// Stop ends the program (SIGTERM, then SIGKILL after grace or when ctx
// ends), closes the relay and removes its socket.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	var err error
	select {
	case err = <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err = <-p.done
	case <-ctx.Done():
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		err = <-p.done
	}
	p.done <- err
	p.relay.Close()
	removeOwn(p.dir)
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil // ended by the signal
	}
	return err
}

func removeOwn(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Main is the namespace's first process: it brings loopback up, listens on
// target there and relays to the Unix socket, runs the program and exits
// with its status. args: socket, target, "--", program, arguments.
func Main(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintf(os.Stderr, "gpupool %s: usage: SOCKET HOST:PORT -- PROGRAM [ARG...]\n", Arg)
		return 2
	}
	sock, target, argv := args[0], args[1], args[3:]
	if err := loopbackUp(); err != nil {
		fmt.Fprintf(os.Stderr, "gpupool %s: bringing loopback up: %v\n", Arg, err)
		return 2
	}
	l, err := net.Listen("tcp", target)
	if err != nil {
		fmt.Fprintf(os.Stderr, "gpupool %s: %v\n", Arg, err)
		return 2
	}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				up, err := net.Dial("unix", sock)
				if err != nil {
					c.Close()
					return
				}
				pipe(c, up)
			}()
		}
	}()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "gpupool %s: %v\n", Arg, err)
		return 2
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	err = cmd.Wait()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return max(ee.ExitCode(), 1)
	}
	return 2
}

// loopbackUp sets lo up: a new network namespace has it down.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// pipe copies both ways until either side ends.
func pipe(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}
