package llama2c

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"sort"
)

// Write encodes a checkpoint of the given version (0 or 1). weights maps
// every tensor name of the config (GGUF names, as Open exposes them) to its
// row-major elements; output.weight is expected exactly when the classifier
// is not shared. Version 0's RoPE tables are computed as llama2.c's export
// writes them (theta 10000).
func Write(w io.Writer, version int, cfg Config, weights map[string][]float32) error {
	if err := write(w, version, cfg, weights); err != nil {
		return fmt.Errorf("llama2c: write: %w", err)
	}
	return nil
}

func write(w io.Writer, version int, cfg Config, weights map[string][]float32) error {
	if version != 0 && version != 1 {
		return fmt.Errorf("version %d: only 0 and 1 can be written", version)
	}
	for _, v := range []int{cfg.Dim, cfg.HiddenDim, cfg.Layers, cfg.Heads, cfg.KVHeads, cfg.VocabSize, cfg.SeqLen} {
		if v <= 0 || v > math.MaxInt32 {
			return fmt.Errorf("config %v: sizes must be positive int32", cfg)
		}
	}
	if err := cfg.check(); err != nil {
		return err
	}
	layout, _, err := cfg.layout(version, true)
	if err != nil {
		return err
	}
	used := 0
	for _, e := range layout {
		if e.name == "" {
			continue
		}
		x, ok := weights[e.name]
		if !ok {
			return fmt.Errorf("missing tensor %q", e.name)
		}
		if len(x) != e.elements() {
			return fmt.Errorf("tensor %q has %d elements, %v needs %d", e.name, len(x), e.shape, e.elements())
		}
		used++
	}
	if used != len(weights) {
		var extra []string
		for name := range weights {
			if !layoutHas(layout, name) {
				extra = append(extra, name)
			}
		}
		sort.Strings(extra)
		return fmt.Errorf("tensors %q are not part of a checkpoint with %s", extra, cfg)
	}

	bw := bufio.NewWriterSize(w, 1<<20)
	le := binary.LittleEndian
	var hdr []byte
	vocab := cfg.VocabSize
	if version == 0 && !cfg.SharedClassifier {
		vocab = -vocab
	}
	if version == 1 {
		hdr = le.AppendUint32(hdr, magic)
		hdr = le.AppendUint32(hdr, 1)
	}
	for _, v := range []int{cfg.Dim, cfg.HiddenDim, cfg.Layers, cfg.Heads, cfg.KVHeads, vocab, cfg.SeqLen} {
		hdr = le.AppendUint32(hdr, uint32(int32(v)))
	}
	if version == 1 {
		shared := byte(0)
		if cfg.SharedClassifier {
			shared = 1
		}
		hdr = append(hdr, shared)
		hdr = append(hdr, make([]byte, v1HeaderSize-len(hdr))...)
	}
	bw.Write(hdr)
	buf := make([]byte, 4)
	put := func(x []float32) {
		for _, v := range x {
			le.PutUint32(buf, math.Float32bits(v))
			bw.Write(buf)
		}
	}
	cos, sin := ropeTables(cfg)
	rope := 0
	for _, e := range layout {
		if e.name != "" {
			put(weights[e.name])
			continue
		}
		if rope == 0 {
			put(cos)
		} else {
			put(sin)
		}
		rope++
	}
	return bw.Flush()
}

func layoutHas(layout []entry, name string) bool {
	for _, e := range layout {
		if e.name == name {
			return true
		}
	}
	return false
}

// ropeTables returns cos and sin of pos*theta_i for every position and pair
// i of a head, as llama2.c's model precomputes them.
func ropeTables(cfg Config) (cos, sin []float32) {
	half := cfg.HeadSize() / 2
	for pos := range cfg.SeqLen {
		for i := range half {
			freq := 1 / math.Pow(10000, float64(2*i)/float64(cfg.HeadSize()))
			cos = append(cos, float32(math.Cos(float64(pos)*freq)))
			sin = append(sin, float32(math.Sin(float64(pos)*freq)))
		}
	}
	return cos, sin
}
