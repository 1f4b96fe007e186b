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
	browser, err := exec.LookPath("chromium")
	require.NoError(t, err, "Chromium is needed to read the report as a person does: run hack/setup-chromium.sh")

	alloc, cancel := chromedp.NewExecAllocator(context.Background(), append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.WindowSize(1200, 900))...)
	defer cancel()
	ctx, cancel := chromedp.NewContext(alloc)
	defer cancel()
	timer := time.AfterFunc(2*time.Minute, cancel) // the whole look, browser start included
	defer timer.Stop()

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
