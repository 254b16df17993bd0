package main

import (
	"io"
	"os"

	"golang.org/x/term"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// useColor reports whether to colour what goes to w: only on a terminal,
// not with NO_COLOR / --no-color, not on a dumb terminal.
func useColor(w io.Writer, noColor bool) bool {
	return !noColor && os.Getenv("TERM") != "dumb" && isTerminal(w)
}
