// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"context"
	"sync"
	"time"

	"github.com/gpupool/gpupool/e2e/cluster"
	"github.com/gpupool/gpupool/e2e/plan"
)

// Session is one cluster a command works on, from bring-up to teardown:
// either one a provider brings up, removed at Close unless kept, or one
// gpupool did not make (SessionOptions.Existing), from which Close
// removes every object the run made. Every command that needs a cluster
// (run, mutants, up, scale, a suite run with go test) opens one, so
// bring-up and teardown are written once.
type Session struct {
	opt SessionOptions
	// Run is the provisioned run, once Open returned; nil when bring-up
	// failed before the cluster answered.
	Run  *Run
	mu   sync.Mutex // Run, between Open and a Close from a signal handler
	once sync.Once
}

// SessionOptions say which cluster a session works on and how.
type SessionOptions struct {
	// ID names the run, and the cluster a provider brings up.
	ID string
	// Provider brings the cluster up (unless Existing is set).
	Provider Provider
	// Existing is a cluster gpupool did not make: the session attaches
	// to it as Attach says.
	Existing *cluster.Existing
	Attach   AttachOptions
	// Up tunes bring-up on a cluster the provider makes.
	Up UpOptions
	// Keep leaves the cluster the provider made running after this
	// process, unless the session's context was cancelled.
	Keep bool
	// DownTimeout bounds removing the cluster (default 1 min);
	// RemoveTimeout the waits for what a run made in an existing cluster
	// to go (default 2 min; the listing and the stack's removal take up to
	// as long again).
	DownTimeout, RemoveTimeout time.Duration
	Output
}

// Output is where progress goes: Log prints a line, Phase says what is
// being done now (the CLI's status line). Either may be nil.
type Output struct {
	Log, Phase func(format string, args ...any)
}

// Logf prints a line to Log, if any.
func (o Output) Logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(format, args...)
	}
}

// Phasef says what is being done now to Phase, if any.
func (o Output) Phasef(format string, args ...any) {
	if o.Phase != nil {
		o.Phase(format, args...)
	}
}

// Kind names the session's provider ("embedded", "kind", "kubeconfig").
func (o SessionOptions) Kind() string {
	if o.Existing != nil {
		return o.Existing.Kind()
	}
	return o.Provider.Kind()
}

// Open is NewSession and Session.Open: the session it returns is never
// nil, and the caller closes it whatever Open returned.
func Open(ctx context.Context, pl *plan.Plan, opt SessionOptions) (*Session, error) {
	s := NewSession(opt)
	return s, s.Open(ctx, pl)
}

// NewSession returns a session not yet open: Close may be called from
// another goroutine (a signal's) while Open brings the cluster up.
func NewSession(opt SessionOptions) *Session {
	if opt.DownTimeout == 0 {
		opt.DownTimeout = time.Minute
	}
	if opt.RemoveTimeout == 0 {
		opt.RemoveTimeout = 2 * time.Minute
	}
	return &Session{opt: opt}
}

// Open brings the cluster up, or attaches to it, and provisions it with
// the plan. Whatever it started, even when it fails, Close removes.
func (s *Session) Open(ctx context.Context, pl *plan.Plan) error {
	opt := s.opt
	var r *Run
	var err error
	if opt.Existing != nil {
		SetRunID(opt.ID)
		r, err = AttachTo(ctx, pl, opt.Existing, opt.Attach)
	} else {
		if opt.Keep {
			opt.Provider.Detach()
		}
		r, err = UpWith(ctx, pl, opt.Provider, opt.Up)
	}
	s.mu.Lock()
	s.Run = r
	s.mu.Unlock()
	return err
}

// Close ends the session whatever happened: on a cluster the provider
// made, the run's controllers, then the cluster (unless kept and ctx, the
// session's context, was not cancelled); on an existing cluster, the run's
// Karpenter, every object the run made, then the run's other controllers
// (the cluster.Existing and its private kubeconfig are the caller's, which
// may open several sessions on it). It is safe to call twice.
func (s *Session) Close(ctx context.Context) {
	s.once.Do(func() { s.close(ctx) })
}

func (s *Session) close(ctx context.Context) {
	o := s.opt
	s.mu.Lock()
	r := s.Run
	s.mu.Unlock()
	if o.Existing != nil {
		if r == nil || r.Cluster == nil {
			return
		}
		// Objects first, while the run's kwok still finishes its pods'
		// deletion; then the run's own controllers. Karpenter before
		// both: nothing makes nodes while the run's go (RemoveOwned
		// finishes the deletion of those it made).
		defer r.Stop()
		r.StopAutoscaler()
		name := r.Cluster.Name
		o.Phasef("removing what run %s made in %s", o.ID, name)
		dctx, cancel := context.WithTimeout(context.Background(), 2*o.RemoveTimeout) // RemoveOwned's two waits, and its listing
		defer cancel()
		n, err := RemoveOwned(dctx, r.Cluster.REST, o.ID, o.RemoveTimeout)
		// Only this process knows the nodes Karpenter made: their pods
		// go whether or not everything else did.
		if n, err := r.RemovePodsOfGoneNodes(dctx); err != nil {
			o.Logf("removing pods left on nodes Karpenter made for run %s: %v", o.ID, err)
		} else if n > 0 {
			o.Logf("removed %d pods of the cluster's own (DaemonSets') left on nodes Karpenter made for run %s", n, o.ID)
		}
		if err != nil {
			o.Logf("removing what run %s made in %s: %v (retry with 'gpupool down --kubeconfig %s --context %s')", o.ID, name, err, o.Existing.Kubeconfig, name)
			return
		}
		o.Logf("removed the %d objects run %s made in %s", n, o.ID, name)
		return
	}
	if r != nil {
		r.Stop()
	}
	if o.Keep && ctx.Err() == nil {
		o.Logf("cluster %s kept; remove it with 'gpupool down'", o.ID)
		return
	}
	dctx, cancel := context.WithTimeout(context.Background(), o.DownTimeout)
	defer cancel()
	o.Phasef("removing cluster %s", o.ID)
	if err := o.Provider.Down(dctx); err != nil {
		o.Logf("tearing down %s: %v", o.ID, err)
		return
	}
	o.Logf("cluster %s removed", o.ID)
}
