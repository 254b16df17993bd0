package llama2c

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
)

func tinyCheckpoint(version int, shared bool) []byte {
	cfg := Config{Dim: 4, HiddenDim: 3, Layers: 1, Heads: 2, KVHeads: 1, VocabSize: 3, SeqLen: 2, SharedClassifier: shared}
	var buf bytes.Buffer
	if err := Write(&buf, version, cfg, randomWeights(rand.New(rand.NewPCG(9, 9)), cfg)); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

// FuzzParse checks that Parse never panics and that what it accepts survives
// Write and Parse unchanged. Seeds live in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add(tinyCheckpoint(0, true))
	f.Add(tinyCheckpoint(1, false))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse("fuzz.bin", b)
		if err != nil {
			return
		}
		w := map[string][]float32{}
		for _, tn := range c.Tensors {
			if len(tn.Data) != 4*numel(tn.Shape) {
				t.Fatalf("tensor %q: %d bytes for shape %v", tn.Name, len(tn.Data), tn.Shape)
			}
			w[tn.Name] = tn.Floats()
		}
		var buf bytes.Buffer
		if err := Write(&buf, c.Version, c.Config, w); err != nil {
			t.Fatalf("Write rejected a parsed checkpoint: %v", err)
		}
		again, err := Parse("again.bin", buf.Bytes())
		if err != nil {
			t.Fatalf("Parse rejected Write's output: %v", err)
		}
		if again.Config != c.Config || len(again.Tensors) != len(c.Tensors) {
			t.Fatalf("round trip changed the checkpoint: %+v vs %+v", again.Config, c.Config)
		}
		for i := range c.Tensors {
			if !bytes.Equal(again.Tensors[i].Data, c.Tensors[i].Data) || !reflect.DeepEqual(again.Tensors[i].Shape, c.Tensors[i].Shape) {
				t.Fatalf("tensor %q changed in the round trip", c.Tensors[i].Name)
			}
		}
	})
}

func numel(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// FuzzParseTokenizer checks that ParseTokenizer never panics and that a
// file it accepts is written back byte for byte.
func FuzzParseTokenizer(f *testing.F) {
	var buf bytes.Buffer
	WriteTokenizer(&buf, &Vocab{MaxTokenLength: 6, Pieces: []string{"<unk>", "\n<s>\n", " a", "<0x0A>"}, Scores: []float32{0, 0, -1.5, 0}})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := ParseTokenizer("fuzz.bin", b)
		if err != nil {
			return
		}
		if len(v.Pieces) != len(v.Scores) {
			t.Fatal("pieces and scores differ in length")
		}
		var out bytes.Buffer
		if err := WriteTokenizer(&out, v); err != nil {
			return // max_token_length shorter than a piece: readable, not writable
		}
		if !bytes.Equal(out.Bytes(), b) {
			t.Fatalf("written back differently")
		}
	})
}
