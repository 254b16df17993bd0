package script

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"go.starlark.net/starlark"

	"tgc/pkg/ir"
	"tgc/pkg/mnist"
	"tgc/pkg/tensor"
)

// Datasets in .tg (tinygrad's tinygrad.nn.datasets) and indexing a
// realized tensor with an integer tensor (X_train[samples]), done as a gather
// on the host.

// MNISTDirEnv names the environment variable with the MNIST data folder.
const MNISTDirEnv = "TGC_MNIST_DIR"

func init() {
	nnModule.members["datasets"] = &namespace{name: "nn.datasets", members: starlark.StringDict{
		"mnist": builtin("mnist", mnistFn),
	}}
}

// mnistCache keeps decoded datasets by folder: decoding the gzip files
// takes longer than a short training run.
var mnistCache = struct {
	sync.Mutex
	m map[string]*mnist.Dataset
}{m: map[string]*mnist.Dataset{}}

// MNISTDir resolves the MNIST data folder: dir when given, else the
// session's "data" setting (tgc train --data), else $TGC_MNIST_DIR, else the
// GoMNIST module in the Go module cache.
func MNISTDir(dir string) (string, error) {
	if dir == "" {
		dir = sessionData()
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
func mnistFn(c *call) (starlark.Value, error) {
	var dirV starlark.Value = starlark.None
	if err := c.unpack("dir?", &dirV); err != nil {
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
		if _, err := c.in.files.CheckDir(s); err != nil {
			return nil, fmt.Errorf("mnist: %v", err)
		}
		dir = s
	}
	dir, err := MNISTDir(dir)
	if err != nil {
		return nil, fmt.Errorf("mnist: %v", err)
	}
	ds, err := loadMNIST(dir)
	if err != nil {
		return nil, fmt.Errorf("mnist: %v", err)
	}
	// Copies: the tensors are the script's to modify.
	images := func(im mnist.Images) (*tensor.Tensor, error) {
		return tensor.FromBytes(ir.Uint8, []int{im.N, 1, im.Rows, im.Cols}, append([]byte{}, im.Pixels...))
	}
	labels := func(l []byte) (*tensor.Tensor, error) {
		return tensor.FromBytes(ir.Uint8, []int{len(l)}, append([]byte{}, l...))
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
		out[i] = NewTensor(t)
	}
	return out, nil
}

// tensorIndex implements x[idx] for an integer tensor idx (tinygrad's
// X_train[samples]): the rows of x at the positions in idx, shape
// idx.shape + x.shape[1:]. It is a gather on the host and a realize point:
// x and idx are computed, the rows are copied into a new realized tensor,
// and no gradient flows back to x. ok is false when k is not a tensor (the
// ordinary index path handles it).
func tensorIndex(x *tensor.Tensor, k starlark.Value) (v starlark.Value, ok bool, err error) {
	it, isT := k.(*Tensor)
	if !isT {
		return nil, false, nil
	}
	idx := it.t
	switch {
	case !idx.DType().IsInt():
		return nil, true, fmt.Errorf("index: indexing with a %s tensor is not supported: the index tensor must be an integer tensor (rows to select), e.g. Tensor.randint(BS, high=X.shape[0])", idx.DType())
	case x.Ndim() == 0:
		return nil, true, fmt.Errorf("index: cannot index a 0-d tensor with a tensor")
	case x.RequiresGrad:
		return nil, true, fmt.Errorf("index: indexing with a tensor gathers rows on the host and has no gradient, but this tensor requires grad: use t.gather(dim, index) or one_hot")
	case tensor.CurrentEngine() == nil:
		return nil, true, fmt.Errorf("index: no device: indexing with a tensor computes the index (no engine is installed)")
	}
	if err := tensor.RealizeAll(x, idx); err != nil {
		return nil, true, err
	}
	data, err := tensor.CurrentEngine().Read(x.Node())
	if err != nil {
		return nil, true, err
	}
	ids, err := idx.Floats()
	if err != nil {
		return nil, true, err
	}
	shape := x.Shape()
	rows := shape[0]
	rowBytes := x.DType().Size()
	for _, d := range shape[1:] {
		rowBytes *= d
	}
	if len(data) < rows*rowBytes {
		return nil, true, fmt.Errorf("index: internal: %d bytes for a tensor of shape %s", len(data), tensor.FormatShape(shape))
	}
	out := make([]byte, len(ids)*rowBytes)
	for i, f := range ids {
		r := int(f)
		if r < 0 {
			r += rows
		}
		if r < 0 || r >= rows {
			return nil, true, fmt.Errorf("index: index %d is out of bounds for dimension 0 with size %d", int(f), rows)
		}
		copy(out[i*rowBytes:(i+1)*rowBytes], data[r*rowBytes:(r+1)*rowBytes])
	}
	t, err := tensor.FromBytes(x.DType(), append(idx.Shape(), shape[1:]...), out)
	if err != nil {
		return nil, true, err
	}
	return NewTensor(t), true, nil
}
