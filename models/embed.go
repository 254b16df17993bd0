// Package models holds the .tg scripts that ship inside the tgc binary:
// the MNIST training scripts of `tgc train mnist` and the examples.
package models

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.tg
var files embed.FS

// Script returns the source of an embedded script by file name
// ("mnist_mlp.tg").
func Script(name string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("no embedded script %s (have %s)", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Names lists the embedded scripts.
func Names() []string {
	entries, _ := fs.ReadDir(files, ".")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}
