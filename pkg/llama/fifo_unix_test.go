//go:build unix

package llama

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"tgc/pkg/llama2c"
)

// TestFIFORefused: a FIFO in place of a model or tokenizer file is refused
// at once, not opened (which would block until a writer appears).
func TestFIFORefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "model.bin")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	done := make(chan error, 2)
	go func() { _, err := Open(fifo); done <- err }()
	go func() { _, err := llama2c.ReadTokenizer(fifo); done <- err }()
	for range 2 {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("FIFO: %v, want a not-a-regular-file error", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("opening a FIFO blocked")
		}
	}
}
