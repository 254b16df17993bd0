package autograd

import (
	"testing"

	"tgc/pkg/ir"
)

// TestOpTableGradRules: every gradient rule the op table names exists, and
// every rule is named by some op.
func TestOpTableGradRules(t *testing.T) {
	named := map[string]bool{}
	for _, op := range ir.Ops() {
		if g := op.Info().Grad; g != "" {
			named[g] = true
			if gradRules[g] == nil {
				t.Errorf("%s names the gradient rule %q, which autograd does not have", op, g)
			}
		}
	}
	for name := range gradRules {
		if !named[name] {
			t.Errorf("gradient rule %q is named by no op", name)
		}
	}
}
