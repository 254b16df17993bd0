package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain doubles as the tgc binary: with TGC_TEST_EXEC=1 the test
// binary runs tgc on its arguments. Tests that need a fresh process (a
// kernel cache read from disk, not from the loader's memory; a crash that
// must not take the test binary down) run tgc through it.
func TestMain(m *testing.M) {
	if os.Getenv("TGC_TEST_EXEC") == "1" {
		if n, err := strconv.ParseUint(os.Getenv("TGC_TEST_FSIZE"), 10, 64); err == nil {
			// A file size limit: writes past it fail (EFBIG), as on a
			// full disk.
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n}); err != nil {
				panic(err)
			}
		}
		os.Exit(execute(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// tgcProcess runs tgc in a child process (environment and working
// directory inherited) and kills it after timeout.
func tgcProcess(t *testing.T, timeout time.Duration, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), "TGC_TEST_EXEC=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("tgc %v hangs (killed after %v); stderr:\n%s", args, timeout, errb.String())
	}
	status = cmd.ProcessState.ExitCode()
	if err != nil && status < 0 {
		t.Fatalf("tgc %v: %v (a signal); stderr:\n%s", args, err, errb.String())
	}
	stdout, stderr = out.String(), errb.String()
	if strings.Contains(stderr, "goroutine ") || strings.Contains(stderr, "panic:") || strings.Contains(stderr, "SIG") {
		t.Errorf("tgc %v crashed or printed a Go stack trace:\n%s", args, stderr)
	}
	return
}
