package tokenizer

import (
	"reflect"
	"testing"
)

// FuzzEncode checks on a small vocabulary with byte fallback that any bytes
// encode without panicking, decode back to themselves, and merge as
// llama2.c's plain scan does. Seeds live in testdata/fuzz/FuzzEncode.
func FuzzEncode(f *testing.F) {
	f.Add("abc ab aaa é")
	f.Add("\x80\xff <s>x")
	tk := synthetic()
	f.Fuzz(func(t *testing.T, s string) {
		got := tk.Encode(s, true, true)
		back, err := tk.Decode(got)
		if err != nil || back != s {
			t.Fatalf("Decode(Encode(%q)) = %q, %v", s, back, err)
		}
		want := append(append([]int{1}, naiveEncode(tk, s)...), 2)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Encode(%q) = %v, the naive scan gives %v", s, got, want)
		}
	})
}
