package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pre-tokenizers cut text into words before byte-level BPE merges inside
// each word. llama.cpp names them in tokenizer.ggml.pre and describes most
// as a list of regular expressions applied in turn: every match and every
// stretch between matches of one expression becomes a piece that the next
// expression cuts further. The expressions use lookahead, which Go's regexp
// lacks, so each one is written out here as a matcher.

// matcher returns the end of the match that starts at byte i of s, or i
// when the expression does not match there. s is one piece: lookahead
// stops at its end.
type matcher func(s string, i int) int

// preTokenizer is a list of expressions applied in turn.
type preTokenizer []matcher

// preTokenizers maps each supported tokenizer.ggml.pre name to its
// expressions, as llama.cpp assigns them.
var preTokenizers = map[string]struct {
	stages []matcher
	// ignoreMerges: a word that is a token as a whole becomes that
	// token without merging (llama.cpp's tokenizer_ignore_merges).
	ignoreMerges bool
	// addBOS is the default of tokenizer.ggml.add_bos_token.
	addBOS bool
}{
	// llama.cpp's fallback for BPE files without a pre key:
	// [\p{P}\$\+<=>\^~\|]+, then GPT-2's expression, then \p{N}+, then
	// [0-9][0-9][0-9].
	"default": {stages: []matcher{punctRun, gpt2Word, numberRun, threeDigits}},
	// GPT-2's expression, which llama.cpp calls gpt-2.
	"gpt-2": {stages: []matcher{gpt2Word}},
	"gpt2":  {stages: []matcher{gpt2Word}},
	// Llama 3's expression.
	"llama-bpe": {stages: []matcher{llama3Word}, ignoreMerges: true, addBOS: true},
	"llama3":    {stages: []matcher{llama3Word}, ignoreMerges: true, addBOS: true},
	"llama-v3":  {stages: []matcher{llama3Word}, ignoreMerges: true, addBOS: true},
	// SmolLM's (a llama-architecture model): each digit alone, then GPT-2's.
	"smollm": {stages: []matcher{oneNumber, gpt2Word}},
}

// PreTokenizers lists the supported tokenizer.ggml.pre names.
func PreTokenizers() []string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// split calls emit with the words of s in order; they cover s exactly.
func (p preTokenizer) split(s string, emit func(word string)) {
	if s == "" {
		return
	}
	if len(p) == 0 {
		emit(s)
		return
	}
	match, rest := p[0], p[1:]
	gap := 0 // start of the text no match has covered yet
	for i := 0; i < len(s); {
		j := match(s, i)
		if j <= i {
			_, n := utf8.DecodeRuneInString(s[i:])
			i += n
			continue
		}
		rest.split(s[gap:i], emit)
		rest.split(s[i:j], emit)
		i, gap = j, j
	}
	rest.split(s[gap:], emit)
}

// Character classes of the expressions: \p{L}, \p{N}, \s, and "other",
// none of the three. A byte that is not valid UTF-8 counts as one "other"
// character, so any bytes split without loss.
func isLetter(r rune) bool { return unicode.IsLetter(r) }
func isNumber(r rune) bool { return unicode.IsNumber(r) }
func isSpace(r rune) bool  { return unicode.IsSpace(r) } // Unicode White_Space, as \s
func isOther(r rune) bool  { return !isLetter(r) && !isNumber(r) && !isSpace(r) }
func isNewline(r rune) bool {
	return r == '\r' || r == '\n'
}

// at returns the character at byte i of s and its length; an invalid byte
// is utf8.RuneError of length 1, which no class but "other" contains.
func at(s string, i int) (rune, int) { return utf8.DecodeRuneInString(s[i:]) }

// run returns the end of the characters of class in from byte i on.
func run(s string, i int, in func(rune) bool) int {
	for i < len(s) {
		r, n := at(s, i)
		if !in(r) {
			break
		}
		i += n
	}
	return i
}

// contraction matches 's 't 're 've 'm 'll 'd at i (ASCII letters; any
// case when fold is set).
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return i
	}
	rest := s[i+1:]
	for _, c := range []string{"s", "t", "re", "ve", "m", "ll", "d"} {
		if len(rest) >= len(c) && (rest[:len(c)] == c || fold && strings.EqualFold(rest[:len(c)], c)) {
			return i + 1 + len(c)
		}
	}
	return i
}

// trailingSpace matches \s+(?!\S)|\s+ at i: a run of whitespace, less its
// last character when a non-space follows and the run is longer than one
// (that character then starts the next word: " word").
func trailingSpace(s string, i int) int {
	end := run(s, i, isSpace)
	if end < len(s) && end-i > 1 {
		_, n := utf8.DecodeLastRuneInString(s[:end])
		return end - n
	}
	return end
}

// gpt2Word is GPT-2's expression:
//
//	's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//
// (llama.cpp leaves out the last \s+; the single space it would match stays
// a piece of its own between matches, the same word.)
func gpt2Word(s string, i int) int {
	if j := contraction(s, i, false); j > i {
		return j
	}
	j := i
	if s[j] == ' ' {
		j++
	}
	if j < len(s) {
		switch r, _ := at(s, j); {
		case isLetter(r):
			return run(s, j, isLetter)
		case isNumber(r):
			return run(s, j, isNumber)
		case isOther(r):
			return run(s, j, isOther)
		}
	}
	return trailingSpace(s, i)
}

// llama3Word is Llama 3's expression:
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//	 ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func llama3Word(s string, i int) int {
	if j := contraction(s, i, true); j > i {
		return j
	}
	r, n := at(s, i)
	switch {
	case isLetter(r):
		return run(s, i, isLetter)
	case !isNewline(r) && !isNumber(r) && i+n < len(s):
		if r2, _ := at(s, i+n); isLetter(r2) {
			return run(s, i+n, isLetter) // one leading character: " word", "(word"
		}
	}
	if isNumber(r) {
		j := i
		for k := 0; k < 3 && j < len(s); k++ {
			r, n := at(s, j)
			if !isNumber(r) {
				break
			}
			j += n
		}
		return j
	}
	j := i
	if s[j] == ' ' {
		j++
	}
	if j < len(s) {
		if r, _ := at(s, j); isOther(r) {
			return newlines(s, run(s, j, isOther))
		}
	}
	// r is whitespace: \s*[\r\n]+ ends after the run's last newline.
	end := run(s, i, isSpace)
	if k := strings.LastIndexAny(s[i:end], "\r\n"); k >= 0 {
		return i + k + 1
	}
	return trailingSpace(s, i)
}

// newlines returns the end of the \r and \n characters from byte i on.
func newlines(s string, i int) int { return run(s, i, isNewline) }

// punctRun matches [\p{P}\$\+<=>\^~\|]+.
func punctRun(s string, i int) int {
	return run(s, i, func(r rune) bool { return unicode.IsPunct(r) || strings.ContainsRune("$+<=>^~|", r) })
}

// numberRun matches \p{N}+.
func numberRun(s string, i int) int { return run(s, i, isNumber) }

// oneNumber matches \p{N}.
func oneNumber(s string, i int) int {
	if r, n := at(s, i); isNumber(r) {
		return i + n
	}
	return i
}

// threeDigits matches [0-9][0-9][0-9].
func threeDigits(s string, i int) int {
	if i+3 <= len(s) && isDigit(s[i]) && isDigit(s[i+1]) && isDigit(s[i+2]) {
		return i + 3
	}
	return i
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
