// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"
)

// On a terminal gpupool keeps one status line under its log: what it is
// doing and for how long, redrawn as the log scrolls. Everything written
// to stderr (its own lines, the harness's, the suites') is routed through
// it so no line lands on top of the status. Without a terminal (CI, a
// pipe) stderr stays plain timestamped lines, and a step that has printed
// nothing for heartbeat says so in one line: what it is doing and for how
// long, so a log never sits silent while gpupool works.

// heartbeat is the longest a plain log stays silent during a step.
const heartbeat = 10 * time.Second

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
	// plain: no terminal; lines pass as they are, and lastLine is when
	// the latest was written.
	plain    bool
	lastLine time.Time
	// jobs: work running side by side (mutants with --parallel), each
	// with its own phase; while any runs, they are the status.
	jobs []*job
}

// job is one of several things a command runs side by side.
type job struct {
	name, phase string
	since       time.Time
}

const syncMark = "\x00gpupool-status-sync"

var status atomic.Pointer[statusLine]

// startStatus turns the status line on if stderr is a terminal; stop
// flushes the log and restores stderr.
func startStatus() (stop func()) {
	plain := os.Getenv("CI") != "" || os.Getenv("TERM") == "dumb" || !term.IsTerminal(int(os.Stderr.Fd()))
	r, w, err := os.Pipe()
	if err != nil {
		return func() {}
	}
	now := time.Now()
	s := &statusLine{tty: os.Stderr, start: now, since: now, synced: make(chan struct{}), plain: plain, lastLine: now}
	status.Store(s)
	os.Stderr = w
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		s.copy(r)
	}()
	quit := make(chan struct{})
	go func() {
		// On a terminal: redraw the status line. Plain: speak when the
		// log has been silent for heartbeat.
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
				if now := s.current(); s.plain && now != "" && time.Since(s.lastLine) >= heartbeat {
					fmt.Fprintf(s.tty, "[%s] still %s (%s in all)\n", time.Now().Format("15:04:05"), now,
						time.Since(s.start).Round(time.Second))
					s.lastLine = time.Now()
				}
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
		if !s.plain {
			fmt.Fprint(s.tty, "\r\033[K")
		}
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
		if s.plain {
			fmt.Fprintf(s.tty, "%s\n", sc.Bytes())
			s.lastLine = time.Now()
		} else {
			fmt.Fprintf(s.tty, "\r\033[K%s\n", sc.Bytes())
			s.draw()
		}
		s.mu.Unlock()
	}
}

var spinner = []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")

// draw writes the status line, cut to the terminal's width; s.mu held.
func (s *statusLine) draw() {
	if s.plain {
		return
	}
	now := s.current()
	if now == "" {
		fmt.Fprint(s.tty, "\r\033[K") // nothing going on: no line
		return
	}
	line := fmt.Sprintf("%c %s (%s in all)", spinner[s.tick%len(spinner)], now, time.Since(s.start).Round(time.Second))
	if w, _, err := term.GetSize(int(s.tty.Fd())); err == nil && w > 1 {
		if r := []rune(line); len(r) >= w {
			line = string(r[:w-1])
		}
	}
	fmt.Fprintf(s.tty, "\r\033[K%s", line)
}

// current is what is going on and for how long: each job's phase while
// jobs run, else the phase; "" when nothing is. s.mu held.
func (s *statusLine) current() string {
	if len(s.jobs) > 0 {
		parts := make([]string, len(s.jobs))
		for i, j := range s.jobs {
			parts[i] = fmt.Sprintf("%s: %s, %s so far", j.name, j.phase, time.Since(j.since).Round(time.Second))
		}
		return strings.Join(parts, "; ")
	}
	if s.phase == "" {
		return ""
	}
	return fmt.Sprintf("%s: %s so far", s.phase, time.Since(s.since).Round(time.Second))
}

// jobPhase says what job name, one of several side by side, does now; a
// new name joins the status after those already there.
func jobPhase(name, format string, args ...any) {
	s := status.Load()
	if s == nil {
		return
	}
	phase := fmt.Sprintf(format, args...)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		if j.name == name {
			if j.phase != phase {
				j.phase, j.since = phase, time.Now()
			}
			s.draw()
			return
		}
	}
	s.jobs = append(s.jobs, &job{name: name, phase: phase, since: time.Now()})
	s.draw()
}

// jobDone takes a finished job out of the status.
func jobDone(name string) {
	s := status.Load()
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs = slices.DeleteFunc(s.jobs, func(j *job) bool { return j.name == name })
	s.draw()
}

// setPhase says what the run does now (on a terminal the status line,
// else what the heartbeat names); "" takes it away, before results go to
// stdout.
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
