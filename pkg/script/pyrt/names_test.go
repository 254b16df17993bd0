package pyrt

import "testing"

func TestNearest(t *testing.T) {
	names := []string{"softmax", "log_softmax", "sum", "shape", "reshape"}
	for name, want := range map[string]string{"sofmax": "softmax", "sun": "sum", "Reshape": "reshape", "xyzzy": "", "logsoftmax": "log_softmax"} {
		if got := Nearest(name, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", name, got, want)
		}
	}
}
