package llama2c

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"tgc/pkg/fileaccess"
	"tgc/pkg/mmap"
)

// Vocab is the content of a llama2.c tokenizer.bin: int32 max_token_length,
// then for every token a float32 score, an int32 byte length and the bytes.
// The file does not store the number of tokens: it ends after the last one.
// llama2.c's export writes SentencePiece pieces with '▁' replaced by a
// space and BOS/EOS as "\n<s>\n" and "\n</s>\n".
type Vocab struct {
	MaxTokenLength int
	Pieces         []string
	Scores         []float32
}

// ReadTokenizer reads the tokenizer file at path.
func ReadTokenizer(path string) (*Vocab, error) {
	fd, err := fileaccess.Open(path)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %w", err)
	}
	defer fd.Close()
	return ReadTokenizerFile(fd)
}

// ReadTokenizerFile is ReadTokenizer for a file already open.
func ReadTokenizerFile(fd *os.File) (*Vocab, error) {
	path := fd.Name()
	b, unmap, err := mmap.MapFile(fd)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", path, err)
	}
	defer unmap()
	return ParseTokenizer(path, b) // copies the pieces out of b
}

// ParseTokenizer parses a tokenizer file held in b; name is used in
// messages.
func ParseTokenizer(name string, b []byte) (*Vocab, error) {
	v, err := parseTokenizer(b)
	if err != nil {
		return nil, fmt.Errorf("llama2c: %s: %w", name, err)
	}
	return v, nil
}

func parseTokenizer(b []byte) (*Vocab, error) {
	le := binary.LittleEndian
	if len(b) < 4 {
		return nil, fmt.Errorf("max_token_length: truncated: the file has %d bytes", len(b))
	}
	v := &Vocab{MaxTokenLength: int(int32(le.Uint32(b)))}
	if v.MaxTokenLength < 0 {
		return nil, fmt.Errorf("max_token_length is %d", v.MaxTokenLength)
	}
	for off := 4; off < len(b); {
		i := len(v.Pieces)
		if len(b)-off < 8 {
			return nil, fmt.Errorf("token %d: truncated: score and length need 8 bytes at offset %d, %d are left", i, off, len(b)-off)
		}
		score := math.Float32frombits(le.Uint32(b[off:]))
		n := int64(int32(le.Uint32(b[off+4:])))
		off += 8
		if n < 0 || n > int64(len(b)-off) {
			return nil, fmt.Errorf("token %d: length %d at offset %d, but %d bytes are left", i, n, off-4, len(b)-off)
		}
		v.Pieces = append(v.Pieces, string(b[off:off+int(n)]))
		v.Scores = append(v.Scores, score)
		off += int(n)
	}
	if len(v.Pieces) == 0 {
		return nil, errors.New("no tokens")
	}
	return v, nil
}

// WriteTokenizer encodes v. MaxTokenLength must be at least the longest
// piece's length.
func WriteTokenizer(w io.Writer, v *Vocab) error {
	if len(v.Pieces) != len(v.Scores) {
		return fmt.Errorf("llama2c: write tokenizer: %d pieces but %d scores", len(v.Pieces), len(v.Scores))
	}
	longest := 0
	for _, p := range v.Pieces {
		longest = max(longest, len(p))
	}
	maxLen := v.MaxTokenLength
	if longest > maxLen || maxLen > math.MaxInt32 {
		return fmt.Errorf("llama2c: write tokenizer: max_token_length %d, but the longest piece has %d bytes", maxLen, longest)
	}
	bw := bufio.NewWriter(w)
	le := binary.LittleEndian
	bw.Write(le.AppendUint32(nil, uint32(maxLen)))
	for i, p := range v.Pieces {
		var rec []byte
		rec = le.AppendUint32(rec, math.Float32bits(v.Scores[i]))
		rec = le.AppendUint32(rec, uint32(len(p)))
		bw.Write(rec)
		bw.WriteString(p)
	}
	return bw.Flush()
}
