package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The process tests run the real binary as separate processes, so they can
// kill it (SIGKILL) the way a crash or an OOM kill would.

// buildOnce builds the hooklane binary once per test binary run.
type binary struct {
	once sync.Once
	path string
	err  error
}

func (b *binary) get(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "hooklane-bin-") //nolint:usetesting // shared by every test of the binary: t.TempDir() would vanish with the first one
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "hooklane")
		cmd := exec.CommandContext(t.Context(), "go", "build", "-o", b.path, ".")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build: %w\n%s", err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// process is one running `hooklane serve`.
type process struct {
	t    *testing.T
	name string
	base string
	cmd  *exec.Cmd
	log  *syncBuffer
	done chan struct{}
}

// freePort returns a loopback address with a port free right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := new(net.ListenConfig).Listen(t.Context(), "tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// syncBuffer is a bytes.Buffer safe for the process's writer and the test.
type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Buffer.Write(p) //nolint:wrapcheck // an io.Writer passes its buffer's result through
}

// ReadFrom copies r through Write, under the lock: the promoted
// bytes.Buffer.ReadFrom, which os/exec's io.Copy prefers, would bypass it.
func (s *syncBuffer) ReadFrom(r io.Reader) (int64, error) {
	n, err := io.Copy(struct{ io.Writer }{s}, r)
	if err != nil {
		return n, fmt.Errorf("copy process output: %w", err)
	}
	return n, nil
}

// startProcess starts the binary with env (HOOKLANE_* only; PATH and HOME
// are passed through) and waits until /healthz answers. The port freePort
// found may be taken by someone else before the process binds it; a
// process that exits at start for that reason is started again on
// another port.
func startProcess(t *testing.T, bin, name string, env map[string]string) *process {
	t.Helper()
	for try := 1; ; try++ {
		p, taken := tryStartProcess(t, bin, name, env)
		if !taken {
			return p
		}
		if try == 3 {
			t.Fatalf("%s: three free ports were taken before it could bind them", name)
		}
		t.Logf("%s: its port was taken before it could bind it; starting it on another", name)
	}
}

// tryStartProcess is one try of startProcess: it reports taken, with no
// process, when the process exited at start because its address was in use.
func tryStartProcess(t *testing.T, bin, name string, env map[string]string) (*process, bool) {
	t.Helper()
	addr := freePort(t)
	cmd := exec.Command(bin, "serve") //nolint:noctx // the process outlives t.Context(), which ends before the cleanup that stops it gracefully
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "HOOKLANE_LISTEN=" + addr}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	// The process dies with the test binary, even when a test times out and
	// no cleanup runs.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	require.NoError(t, cmd.Start())
	p := &process{t: t, name: name, base: "http://" + addr, cmd: cmd, log: buf, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			buf.mu.Lock()
			t.Logf("--- log of %s ---\n%s", name, tail(buf.String(), 8000))
			buf.mu.Unlock()
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		// Bounded: a port taken by another server may accept and never answer.
		probeCtx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		resp, err := get(probeCtx, p.base+"/healthz")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return p, false
			}
		}
		cancel()
		select {
		case <-p.done:
			buf.mu.Lock()
			defer buf.mu.Unlock()
			if strings.Contains(buf.String(), "address already in use") {
				return nil, true
			}
			t.Fatalf("%s exited at start:\n%s", name, buf.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not become healthy", name)
		}
	}
}

// get sends a GET request bound to ctx.
func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("build request: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", url, err)
	}
	return resp, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// kill sends SIGKILL: no shutdown, no cleanup, as in a crash.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

// stop asks for a graceful stop and waits for it, killing after a bound.
func (p *process) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// post sends one request to the process and returns the status (0 when the
// connection failed).
func (p *process) post(ctx context.Context, path, contentType, body string) (int, []byte) {
	status, _, b := p.request(ctx, http.MethodPost, path, contentType, body)
	return status, b
}

// request sends one request to the process and returns the status (0 when
// the connection failed), the response headers and the body.
func (p *process) request(ctx context.Context, method, path, contentType, body string) (int, http.Header, []byte) {
	req, err := http.NewRequestWithContext(ctx, method, p.base+path, strings.NewReader(body))
	if err != nil {
		return 0, nil, nil
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, nil
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		// An answer cut short (the context ended while it was read) is no
		// answer: a caller must not take a partial body for the whole.
		return 0, nil, nil
	}
	return resp.StatusCode, resp.Header, b.Bytes()
}

// logText returns what the process logged so far.
func (p *process) logText() string {
	p.log.mu.Lock()
	defer p.log.mu.Unlock()
	return p.log.String()
}

// alive reports whether the process is still running.
func (p *process) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}
