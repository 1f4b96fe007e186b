// Copyright 2026 The gpupool Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build e2e

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpupool/gpupool/reports"
)

// screenshotPath is where the report's screenshot is kept for the README
// (docs/report-screenshot.png is a copy of one).
var screenshotPath = filepath.Join("reports", "out", "report-screenshot.png")

// assertReportReadable opens a failing run's report.html in headless
// Chromium (Debian's package; hack/setup-chromium.sh installs it) and
// asserts on what a person sees: the verdict at the top, the failed check's
// evidence without a click, and the candidate's fingerprint.
func assertReportReadable(t *testing.T, dir, failedCheck string) {
	t.Helper()
	s, err := reports.ReadSummary(dir)
	require.NoError(t, err)
	ctx := newBrowser(t)

	check := `[id="` + failedCheck + `"]`
	text := func(sel string) string {
		v, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		require.NoError(t, err, "reading %s", sel)
		return v
	}
	// The first Run starts the browser and must not carry a timeout of its
	// own (chromedp.Run); ctx above bounds the whole test.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate("file://"+filepath.Join(dir, reports.HTMLFile)),
		chromedp.WaitVisible(chromedp.CSS("#verdict")),
		// Visible without a click: a failed check opens itself.
		chromedp.WaitVisible(chromedp.CSS(check+" .evidence")),
	))
	verdict, evidence, fingerprint := text("#verdict"), text(check+" .evidence"), text("#fingerprint")
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(strings.TrimSpace(verdict), "FAIL"), "verdict at the top: %q", verdict)
	assert.Contains(t, verdict, s.Candidate.Name)
	assert.Regexp(t, `expected .* but `, evidence, "the failed check's evidence says what was expected and what happened")
	assert.NotEmpty(t, s.Candidate.Fingerprint)
	assert.Equal(t, s.Candidate.Fingerprint, strings.TrimSpace(fingerprint))
	require.NotEmpty(t, shot)
	path := filepath.Join(repoRoot, screenshotPath)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, shot, 0o644))
	t.Logf("report screenshot: %s", path)
}

// scaleLook is what assertScaleReportReadable reads off scale.html.
type scaleLook struct {
	Raw     []string `json:"raw"`     // cells showing a Go value
	Legends []string `json:"legends"` // every legend entry
	Clipped []string `json:"clipped"` // entries whose text does not fit
	Shared  []string `json:"shared"`  // entries sharing a colour in one chart
	Pending []string `json:"pending"` // the "Pending by contract reason" cells
	Anchors []string `json:"anchors"` // figure anchors naming scheduler_perf
}

// assertScaleReportReadable opens a scale run's scale.html in headless
// Chromium and asserts what a person sees: no cell shows a Go value, every
// legend entry is whole and has a colour of its own in its chart, Pending
// pods are explained in words, and an upstream figure says where and when
// it was measured.
func assertScaleReportReadable(t *testing.T, dir string) {
	t.Helper()
	ctx := newBrowser(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate("file://"+filepath.Join(dir, "scale.html")),
		chromedp.WaitVisible(chromedp.CSS("ul.legend")),
	))
	look, err := chromedp.Run(ctx, chromedp.Evaluate[scaleLook](`(() => {
		const out = {raw: [], legends: [], clipped: [], shared: [], pending: [], anchors: []};
		document.querySelectorAll('td').forEach(td => {
			if (/map\[|<nil>|\{\{/.test(td.textContent)) out.raw.push(td.textContent);
			if (td.textContent.includes('scheduler_perf')) out.anchors.push(td.textContent);
		});
		document.querySelectorAll('ul.legend').forEach(ul => {
			const seen = {};
			ul.querySelectorAll('li').forEach(li => {
				const c = getComputedStyle(li.querySelector('.swatch')).backgroundColor;
				if (seen[c]) out.shared.push(seen[c] + ' and ' + li.textContent);
				seen[c] = li.textContent;
				if (li.scrollWidth > li.clientWidth + 1) out.clipped.push(li.textContent);
				out.legends.push(li.textContent);
			});
		});
		document.querySelectorAll('td.pending').forEach(td => out.pending.push(td.innerText));
		return out;
	})()`))
	require.NoError(t, err)
	assert.Empty(t, look.Raw, "cells showing a Go value")
	assert.NotEmpty(t, look.Legends)
	assert.Empty(t, look.Clipped, "legend entries cut")
	assert.Empty(t, look.Shared, "series sharing a colour")
	require.NotEmpty(t, look.Pending)
	words := false
	for _, p := range look.Pending {
		words = words || strings.Contains(p, "pool")
	}
	assert.True(t, words, "Pending pods explained in words: %q", look.Pending)
	require.NotEmpty(t, look.Anchors, "a burst is set beside scheduler_perf")
	for _, a := range look.Anchors {
		assert.Regexp(t, `not measured in this run|not this machine`, a, "an upstream figure says it is not this run's")
		assert.Regexp(t, `20\d\d-\d\d-\d\d|upstream CI`, a, "an upstream figure says when or where it was measured")
	}
}

// newBrowser starts headless Chromium (Debian's package;
// hack/setup-chromium.sh installs it) for one look, bounded to 2 minutes
// with the browser's start; it goes when the test ends, and so do the
// directories Chromium makes in its TMPDIR (org.chromium.Chromium.*),
// which it leaves when it is killed.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "Chromium is needed to read the report as a person does: run hack/setup-chromium.sh")
	// Short: Chromium's singleton socket lives in it, and a unix socket's
	// path may not pass 107 bytes (t.TempDir's, named after the test, did).
	// Removed after the cleanup below stops the browser.
	tmp, err := os.MkdirTemp("", "gpupool-chromium-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(tmp) })
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1200, 900), chromedp.Env("TMPDIR="+tmp))...)
	ctx, cancel := chromedp.NewContext(alloc)
	timer := time.AfterFunc(2*time.Minute, cancel)
	t.Cleanup(func() {
		timer.Stop()
		cancel()
		cancelAlloc()
	})
	return ctx
}
