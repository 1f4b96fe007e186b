// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

package scale

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/gpupool/gpupool/e2e/cluster"
)

// profiler writes Go profiles of the control plane next to the report: a
// CPU profile of the apiserver and the scheduler during each burst and a
// heap profile of both at the end, so a figure that misses its target
// comes with the profile that shows where the time or memory went.
type profiler struct {
	dir, prefix string
	cs          kubernetes.Interface
	clusterDir  string
	log         func(string, ...any)
	http        *http.Client
}

// Profiled components: the apiserver through the admin client, the
// scheduler on its own port (the cluster must run with Tuning.Profiling).
const (
	profileAPIServer = "kube-apiserver"
	profileScheduler = "kube-scheduler"
)

func newProfiler(dir, prefix string, cs kubernetes.Interface, clusterDir string, log func(string, ...any)) *profiler {
	return &profiler{dir: dir, prefix: prefix, cs: cs, clusterDir: clusterDir, log: log, http: &http.Client{
		Timeout: 2 * time.Minute,
		// The component's serving certificate is self-signed, on 127.0.0.1.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
	}}
}

// cpu profiles both components for d, starting after delay, in the
// background; the returned func waits for the files.
func (p *profiler) cpu(ctx context.Context, phase string, delay, d time.Duration) (wait func()) {
	var wg sync.WaitGroup
	for _, c := range []string{profileAPIServer, profileScheduler} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-ctx.Done():
				return
			case <-time.After(delay):
			}
			p.write(ctx, c, fmt.Sprintf("%s-%s.cpu.pprof", phase, c), "profile", int(d.Seconds()))
		}()
	}
	return wg.Wait
}

// heap writes both components' heap profiles now.
func (p *profiler) heap(ctx context.Context, when string) {
	for _, c := range []string{profileAPIServer, profileScheduler} {
		p.write(ctx, c, fmt.Sprintf("%s-%s.heap.pprof", when, c), "heap", 0)
	}
}

// write saves one profile (/debug/pprof/<profile>, over seconds if > 0); a
// profile that cannot be had is logged, never fatal: it is evidence, not a
// measurement.
func (p *profiler) write(ctx context.Context, component, file, profile string, seconds int) {
	path := filepath.Join(p.dir, p.prefix+"-"+file)
	data, err := p.fetch(ctx, component, profile, seconds)
	if err == nil {
		err = os.WriteFile(path, data, 0o644)
	}
	if err != nil {
		p.log("profile %s of %s: %v", profile, component, err)
		return
	}
	p.log("profile written: %s", path)
}

func (p *profiler) fetch(ctx context.Context, component, profile string, seconds int) ([]byte, error) {
	query := url.Values{}
	if seconds > 0 {
		query.Set("seconds", strconv.Itoa(seconds))
	}
	if component == profileAPIServer {
		req := p.cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/" + profile).Timeout(2 * time.Minute)
		for k, v := range query {
			req = req.Param(k, v[0])
		}
		return req.DoRaw(ctx)
	}
	addr, err := servingAddress(p.clusterDir, component)
	if err != nil {
		return nil, err
	}
	u := url.URL{Scheme: "https", Host: addr, Path: "/debug/pprof/" + profile, RawQuery: query.Encode()}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s: %.200s", req.URL, resp.Status, body)
	}
	return body, nil
}

// servingAddress reads a component's --bind-address and --secure-port
// from its command line.
func servingAddress(clusterDir, component string) (string, error) {
	for _, proc := range cluster.ProcessesUnder(clusterDir) {
		if proc.Name != component {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", proc.PID))
		if err != nil {
			return "", err
		}
		host, port := "127.0.0.1", ""
		for _, arg := range strings.Split(string(b), "\x00") {
			if v, ok := strings.CutPrefix(arg, "--bind-address="); ok {
				host = v
			}
			if v, ok := strings.CutPrefix(arg, "--secure-port="); ok {
				port = v
			}
		}
		if port == "" {
			return "", fmt.Errorf("%s (pid %d) has no --secure-port", component, proc.PID)
		}
		return host + ":" + port, nil
	}
	return "", fmt.Errorf("no %s process under %s", component, clusterDir)
}
