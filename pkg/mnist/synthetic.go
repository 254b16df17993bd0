package mnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"os"
	"path/filepath"
)

// WriteSynthetic writes a small dataset in MNIST's file format (gzipped
// IDX) into dir, for tests that must not depend on the real data: the
// image of digit k is bright in rows 2k..2k+2, plus one pixel that varies.
func WriteSynthetic(dir string, nTrain, nTest int) error {
	write := func(name string, magic uint32, dims []uint32, body []byte) error {
		var raw, z bytes.Buffer
		binary.Write(&raw, binary.BigEndian, magic)
		binary.Write(&raw, binary.BigEndian, dims)
		raw.Write(body)
		w := gzip.NewWriter(&z)
		w.Write(raw.Bytes())
		if err := w.Close(); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), z.Bytes(), 0o644)
	}
	set := func(n, off int) ([]byte, []byte) {
		px, labels := make([]byte, n*784), make([]byte, n)
		for i := range n {
			k := (i + off) % 10
			labels[i] = byte(k)
			for p := 2 * k * 28; p < (2*k+3)*28; p++ {
				px[i*784+p] = 255
			}
			px[i*784+(i*7)%784] = byte(i)
		}
		return px, labels
	}
	for i, n := range []int{nTrain, nTest} {
		px, l := set(n, 3*i)
		if err := write(Files[2*i], imagesMagic, []uint32{uint32(n), 28, 28}, px); err != nil {
			return err
		}
		if err := write(Files[2*i+1], labelsMagic, []uint32{uint32(n)}, l); err != nil {
			return err
		}
	}
	return nil
}
