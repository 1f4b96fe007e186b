package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// On a terminal gpupool keeps one status line under its log: what it is
// doing and for how long, redrawn as the log scrolls. Everything written
// to stderr (its own lines, the harness's, the suites') is routed through
// it so no line lands on top of the status. Without a terminal (CI, a
// pipe) stderr stays plain timestamped lines.

// statusLine owns the terminal while it runs.
type statusLine struct {
	mu    sync.Mutex
	tty   *os.File
	phase string
	since time.Time
	start time.Time
	tick  int
	// synced receives when copy reaches a syncMark: everything written to
	// stderr before it is on the terminal.
	synced chan struct{}
}

const syncMark = "\x00gpupool-status-sync"

var status atomic.Pointer[statusLine]

// startStatus turns the status line on if stderr is a terminal; stop
// flushes the log and restores stderr.
func startStatus() (stop func()) {
	if os.Getenv("CI") != "" || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(os.Stderr.Fd())) {
		return func() {}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	s := &statusLine{tty: os.Stderr, start: time.Now(), since: time.Now(), synced: make(chan struct{})}
	status.Store(s)
	os.Stderr = w
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		s.copy(r)
	}()
	quit := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				s.mu.Lock()
				s.tick++
				s.draw()
				s.mu.Unlock()
			}
		}
	}()
	return func() {
		close(quit)
		os.Stderr = s.tty
		w.Close()
		<-copied
		s.mu.Lock()
		fmt.Fprint(s.tty, "\r\033[K")
		status.Store(nil)
		s.mu.Unlock()
	}
}

// copy writes each log line above the status line.
func (s *statusLine) copy(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		if string(sc.Bytes()) == syncMark {
			s.synced <- struct{}{}
			continue
		}
		s.mu.Lock()
		fmt.Fprintf(s.tty, "\r\033[K%s\n", sc.Bytes())
		s.draw()
		s.mu.Unlock()
	}
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// draw writes the status line, cut to the terminal's width; s.mu held.
func (s *statusLine) draw() {
	phase := s.phase
	if phase == "" {
		fmt.Fprint(s.tty, "\r\033[K") // nothing going on: no line
		return
	}
	line := fmt.Sprintf("%c %s · %s (%s in all)", spinner[s.tick%len(spinner)], phase,
		time.Since(s.since).Round(time.Second), time.Since(s.start).Round(time.Second))
	if w, _, err := term.GetSize(int(s.tty.Fd())); err == nil && w > 1 {
		if r := []rune(line); len(r) >= w {
			line = string(r[:w-1])
		}
	}
	fmt.Fprintf(s.tty, "\r\033[K%s", line)
}

// setPhase says what the run does now (a no-op without a terminal); ""
// takes the status line away, before results go to stdout.
func setPhase(format string, args ...any) {
	s := status.Load()
	if s == nil {
		return
	}
	if format == "" {
		// Results go to stdout next: the log written so far comes first.
		fmt.Fprintln(os.Stderr, syncMark)
		select {
		case <-s.synced:
		case <-time.After(5 * time.Second):
		}
	}
	s.mu.Lock()
	s.phase, s.since = fmt.Sprintf(format, args...), time.Now()
	s.draw()
	s.mu.Unlock()
}
