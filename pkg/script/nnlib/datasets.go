package nnlib

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/mnist"
	"tgc/pkg/script/pyrt"
	"tgc/pkg/script/tensorlib"
	"tgc/pkg/tensor"
)

// Datasets in .tg: tinygrad's tinygrad.nn.datasets.

// MNISTDirEnv names the environment variable with the MNIST data folder.
const MNISTDirEnv = "TGC_MNIST_DIR"

// mnistCache keeps decoded datasets by folder: decoding the gzip files
// takes longer than a short training run.
var mnistCache = struct {
	sync.Mutex
	m map[string]*mnist.Dataset
}{m: map[string]*mnist.Dataset{}}

// MNISTDir resolves the MNIST data folder: dir when given, else
// configured (tgc train --data), else $TGC_MNIST_DIR, else the GoMNIST
// module in the Go module cache.
func MNISTDir(dir, configured string) (string, error) {
	if dir == "" {
		dir = configured
	}
	if dir == "" {
		dir = os.Getenv(MNISTDirEnv)
	}
	if dir != "" {
		return dir, nil
	}
	return mnist.FindData()
}

// loadMNIST reads (or finds in the cache) the dataset in dir. A missing
// file gives the message that says how to get the data.
func loadMNIST(dir string) (*mnist.Dataset, error) {
	mnistCache.Lock()
	defer mnistCache.Unlock()
	if ds, ok := mnistCache.m[dir]; ok {
		return ds, nil
	}
	ds, err := mnist.Load(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (%v): run `go mod download %s@%s` and leave --data unset (tgc finds the module cache), or pass --data DIR (or set %s) to a folder with the four IDX files (%s, %s, %s, %s)",
			mnist.ErrNotFound, dir, err, mnist.Module, mnist.Version, MNISTDirEnv, mnist.Files[0], mnist.Files[1], mnist.Files[2], mnist.Files[3])
	}
	if err != nil {
		return nil, err
	}
	mnistCache.m[dir] = ds
	return ds, nil
}

// mnistFn is nn.datasets.mnist(dir=None): X_train, Y_train, X_test, Y_test
// as realized uint8 tensors of shapes (60000, 1, 28, 28), (60000,),
// (10000, 1, 28, 28), (10000,), like tinygrad's.
func mnistFn(c *pyrt.Call) (starlark.Value, error) {
	var dirV starlark.Value = starlark.None
	if err := c.Unpack("dir?", &dirV); err != nil {
		return nil, err
	}
	dir := ""
	if dirV != starlark.None {
		s, ok := starlark.AsString(dirV)
		if !ok {
			return nil, fmt.Errorf("mnist: for parameter dir: got %s, want string or None", dirV.Type())
		}
		// A folder the script names is subject to its file access; the
		// folder tgc finds itself (--data, $TGC_MNIST_DIR, the module
		// cache) is the user's choice.
		if _, err := files(c).CheckDir(s); err != nil {
			return nil, fmt.Errorf("mnist: %v", err)
		}
		dir = s
	}
	configured := ""
	if h, ok := pyrt.HostOf(c.Thread).(interface{ DataDir() string }); ok {
		configured = h.DataDir()
	}
	dir, err := MNISTDir(dir, configured)
	if err != nil {
		return nil, fmt.Errorf("mnist: %v", err)
	}
	ds, err := loadMNIST(dir)
	if err != nil {
		return nil, fmt.Errorf("mnist: %v", err)
	}
	// Copies: the tensors are the script's to modify.
	images := func(im mnist.Images) (*tensor.Tensor, error) {
		return tensorlib.Context(c).FromBytes(ir.Uint8, []int{im.N, 1, im.Rows, im.Cols}, append([]byte{}, im.Pixels...))
	}
	labels := func(l []byte) (*tensor.Tensor, error) {
		return tensorlib.Context(c).FromBytes(ir.Uint8, []int{len(l)}, append([]byte{}, l...))
	}
	out := make(starlark.Tuple, 4)
	for i, mk := range []func() (*tensor.Tensor, error){
		func() (*tensor.Tensor, error) { return images(ds.TrainImages) },
		func() (*tensor.Tensor, error) { return labels(ds.TrainLabels) },
		func() (*tensor.Tensor, error) { return images(ds.TestImages) },
		func() (*tensor.Tensor, error) { return labels(ds.TestLabels) },
	} {
		t, err := mk()
		if err != nil {
			return nil, fmt.Errorf("mnist: %v", err)
		}
		out[i] = tensorlib.NewTensor(t)
	}
	return out, nil
}
