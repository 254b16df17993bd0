package ir

// RunPasses runs a pass table of a test's making (a deliberately broken
// pass must be caught by Verify and named).
var RunPasses = runPasses

// Rewrite exposes Kernel.rewrite to the broken passes of tests.
func (k *Kernel) Rewrite(f func(b *Builder, e *Expr) *Expr) *Kernel { return k.rewrite(f) }

func (p *Program) CheckHoisted(k *Kernel) error { return p.checkHoisted(k) }
