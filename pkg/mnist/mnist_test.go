package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func idx(magic uint32, dims []uint32, body []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.BigEndian, magic)
	binary.Write(&b, binary.BigEndian, dims)
	b.Write(body)
	return b.Bytes()
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadImages(t *testing.T) {
	px := []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	for _, name := range []string{"imgs", "imgs.gz"} {
		data := idx(imagesMagic, []uint32{3, 2, 2}, px)
		if strings.HasSuffix(name, ".gz") {
			data = gz(data)
		}
		im, err := ReadImages(write(t, name, data))
		if err != nil {
			t.Fatal(err)
		}
		if im.N != 3 || im.Rows != 2 || im.Cols != 2 || !bytes.Equal(im.Pixels, px) {
			t.Errorf("%s: got %+v", name, im)
		}
	}
}

func TestRejectsBadFiles(t *testing.T) {
	cases := []struct {
		name, want string
		data       []byte
		labels     bool
	}{
		{"bad magic", "bad IDX magic", idx(labelsMagic, []uint32{1, 1, 1}, []byte{0}), false},
		{"truncated header", "truncated IDX header", []byte{0, 0, 8, 3, 0}, false},
		{"truncated body", "ends before", idx(imagesMagic, []uint32{2, 2, 2}, []byte{1, 2, 3}), false},
		{"trailing data", "continues past", idx(imagesMagic, []uint32{1, 1, 1}, []byte{1, 2}), false},
		{"huge header", "implausible", idx(imagesMagic, []uint32{4000000000, 28, 28}, nil), false},
		{"zero images", "implausible", idx(imagesMagic, []uint32{0, 28, 28}, nil), false},
		{"label not a digit", "not a digit", idx(labelsMagic, []uint32{2}, []byte{3, 12}), true},
		{"huge label count", "implausible", idx(labelsMagic, []uint32{4000000000}, nil), true},
		{"not gzip", "not a gzip file", []byte("plain"), true},
	}
	for _, tc := range cases {
		name := "f"
		if tc.name == "not gzip" {
			name = "f.gz"
		}
		p := write(t, name, tc.data)
		var err error
		if tc.labels {
			_, err = ReadLabels(p)
		} else {
			_, err = ReadImages(p)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestMissingDataSaysHowToGetIt(t *testing.T) {
	t.Setenv("GOMODCACHE", t.TempDir())
	t.Setenv("GOPATH", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	_, err := FindData()
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "go mod download "+Module+"@"+Version) {
		t.Fatalf("got %v", err)
	}
}

// TestRealMNIST loads the dataset from the module cache (make test and
// .ci/run download it) and checks facts everyone knows about MNIST.
func TestRealMNIST(t *testing.T) {
	dir, err := FindData()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ds.TrainImages.N != 60000 || ds.TestImages.N != 10000 || ds.TrainImages.Rows != 28 || ds.TrainImages.Cols != 28 {
		t.Fatalf("got %d train / %d test images of %dx%d", ds.TrainImages.N, ds.TestImages.N, ds.TrainImages.Rows, ds.TrainImages.Cols)
	}
	if ds.TrainLabels[0] != 5 || ds.TestLabels[0] != 7 {
		t.Errorf("first labels %d (train) and %d (test), want 5 and 7", ds.TrainLabels[0], ds.TestLabels[0])
	}
	var counts [10]int
	for _, l := range ds.TrainLabels {
		counts[l]++
	}
	if counts[1] != 6742 || counts[5] != 5421 {
		t.Errorf("training label counts %v: want 6742 ones and 5421 fives", counts)
	}
}

func FuzzReadImages(f *testing.F) {
	f.Add(idx(imagesMagic, []uint32{1, 2, 2}, []byte{1, 2, 3, 4}))
	f.Add(idx(imagesMagic, []uint32{1, 1, 1}, nil))
	f.Add(idx(labelsMagic, []uint32{1}, []byte{3}))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if im, err := ReadImages(p); err == nil && len(im.Pixels) != im.N*im.Rows*im.Cols {
			t.Fatalf("accepted %d pixels for %dx%dx%d", len(im.Pixels), im.N, im.Rows, im.Cols)
		}
		_, _ = ReadLabels(p)
	})
}
