// Package testmodels finds the project's shared test models (shared/models:
// a llama2.c checkpoint, the LLaMA tokenizer, reference results from
// llama2.c), which every developer and CI run has beside the repository.
package testmodels

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the shared/models directory: $TGC_SHARED_MODELS if set, else
// the first shared/models found beside the working directory or one of its
// parents. It skips the test when there is none.
func Dir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("TGC_SHARED_MODELS"); d != "" {
		return d
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		cand := filepath.Join(d, "shared", "models")
		if _, err := os.Stat(filepath.Join(cand, "expected.json")); err == nil {
			return cand
		}
		if filepath.Dir(d) == d {
			t.Skip("shared/models not found beside the repository (set TGC_SHARED_MODELS)")
		}
	}
}

// Path returns the path of a file in shared/models.
func Path(t testing.TB, name string) string {
	t.Helper()
	return filepath.Join(Dir(t), name)
}

// Expected is shared/models/expected.json: results computed by llama2.c's
// run.c.
type Expected struct {
	Stories260K struct {
		Config struct {
			Dim       int `json:"dim"`
			HiddenDim int `json:"hidden_dim"`
			Layers    int `json:"n_layers"`
			Heads     int `json:"n_heads"`
			KVHeads   int `json:"n_kv_heads"`
			VocabSize int `json:"vocab_size"`
			SeqLen    int `json:"seq_len"`
		} `json:"config"`
		Greedy struct {
			PromptIDs []int `json:"prompt_ids"`
			Steps     int   `json:"steps"`
			IDs       []int `json:"ids"`
		} `json:"greedy_from_bos"`
	} `json:"stories260K.bin"`
	Tokenizer struct {
		Encodings map[string][]int `json:"encodings"`
	} `json:"tokenizer.bin"`
}

// LoadExpected reads expected.json.
func LoadExpected(t testing.TB) *Expected {
	t.Helper()
	b, err := os.ReadFile(Path(t, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e Expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	if len(e.Stories260K.Greedy.IDs) == 0 || len(e.Tokenizer.Encodings) == 0 {
		t.Fatal("expected.json lacks the greedy ids or the encodings")
	}
	return &e
}
