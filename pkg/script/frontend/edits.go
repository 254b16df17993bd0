package frontend

import (
	"bytes"
	"sort"
	"strings"
	"unicode/utf8"
)

// The translation is a list of edits of the source text. An edit replaces
// src[start:end] (an insertion when start == end) with text; each byte of
// the new text remembers the source offset it stands for, so that every
// position in the translated text maps back to the original. Edits never
// add or remove newlines overall, so line numbers are exact wherever the
// parser reports a problem; only the lines an edit touches need a map.

type edit struct {
	start, end int
	text       string
	origins    []int32 // per byte of text; nil: every byte stands for at
	at         int32
	// Ordering of insertions at the same offset, so that constructs nest:
	// closes come before opens; among closes the inner one (the later
	// span start) first; among opens the outer one (the later span end).
	close bool
	span  int
}

// insert is an insertion at off standing for source offset at.
func insert(off, at int, text string) edit {
	return edit{start: off, end: off, text: text, at: int32(at)}
}

// open is an insertion that opens a construct spanning [off, spanEnd).
func open(off, spanEnd int, text string) edit {
	return edit{start: off, end: off, text: text, at: int32(off), span: spanEnd}
}

// closeAt is an insertion at off that closes a construct that started at
// spanStart; its text stands for source offset at.
func closeAt(off, spanStart, at int, text string) edit {
	return edit{start: off, end: off, text: text, at: int32(at), close: true, span: spanStart}
}

// replace replaces src[start:end] with text standing for start.
func replace(start, end int, text string) edit {
	return edit{start: start, end: end, text: text, at: int32(start)}
}

func (e edit) insertion() bool { return e.start == e.end }

// before orders edits: by offset; at one offset insertions before a
// replacement, and insertions nested as described on edit.
func (a edit) before(b edit) bool {
	if a.start != b.start {
		return a.start < b.start
	}
	if a.insertion() != b.insertion() {
		return a.insertion()
	}
	if !a.insertion() {
		return false
	}
	if a.close != b.close {
		return a.close
	}
	return a.span > b.span
}

// apply builds the translated text and its position map. A replacement
// swallows the edits that lie strictly inside it.
func apply(src []byte, edits []edit) ([]byte, *PosMap) {
	if len(edits) == 0 {
		return src, nil
	}
	sort.SliceStable(edits, func(i, j int) bool { return edits[i].before(edits[j]) })
	out := make([]byte, 0, len(src)+32*len(edits))
	origin := make([]int32, 0, cap(out)) // source offset of each output byte
	copyTo := func(from, to int) {
		out = append(out, src[from:to]...)
		for i := from; i < to; i++ {
			origin = append(origin, int32(i))
		}
	}
	pos := 0
	var changed []int // output offsets of the edited bytes
	for _, e := range edits {
		if e.start < pos || e.end < pos {
			continue // inside an earlier replacement
		}
		// A replacement keeps the newlines of what it replaces, so that
		// line numbers stay exact (they land where the text was a
		// continuation line inside brackets, or an empty line).
		if missing := bytes.Count(src[e.start:e.end], []byte{'\n'}) - strings.Count(e.text, "\n"); missing > 0 {
			e.text += strings.Repeat("\n", missing)
			if e.origins != nil {
				for range missing {
					e.origins = append(e.origins, int32(e.end))
				}
			}
		}
		copyTo(pos, e.start)
		for i := range len(e.text) {
			if e.origins != nil {
				origin = append(origin, e.origins[i])
			} else {
				origin = append(origin, e.at)
			}
		}
		changed = append(changed, len(out))
		out = append(out, e.text...)
		pos = e.end
	}
	copyTo(pos, len(src))
	return out, newPosMap(src, out, origin, changed)
}

// PosMap maps a position in the translated text back to the source.
// Lines the translation did not touch map to themselves.
type PosMap struct {
	lines map[int32][]srcPos // output line -> source position of each rune
}

type srcPos struct{ line, col int32 }

// newPosMap records the lines that hold an edited byte (and a line an edit
// moved text into, which the edited offsets cover).
func newPosMap(src, out []byte, origin []int32, changed []int) *PosMap {
	m := &PosMap{lines: map[int32][]srcPos{}}
	outStarts := lineStarts(out)
	srcStarts := lineStarts(src)
	lineOf := func(starts []int, off int) int {
		return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) // 1-based
	}
	// A source line's rune columns, computed once per line.
	colCache := map[int][]int32{}
	srcCol := func(off int) srcPos {
		l := lineOf(srcStarts, off)
		cols, ok := colCache[l]
		if !ok {
			begin := srcStarts[l-1]
			end := len(src)
			if l < len(srcStarts) {
				end = srcStarts[l]
			}
			cols = make([]int32, end-begin+1)
			c := int32(1)
			for j := begin; j <= end; j++ {
				cols[j-begin] = c
				if j < end && (src[j]&0xC0 != 0x80) {
					c++
				}
			}
			// continuation bytes share their rune's column
			for j := begin; j < end; j++ {
				if src[j]&0xC0 == 0x80 && j > begin {
					cols[j-begin] = cols[j-begin-1]
				}
			}
			colCache[l] = cols
		}
		return srcPos{int32(l), cols[off-srcStarts[l-1]]}
	}
	done := map[int]bool{}
	for _, off := range changed {
		l := lineOf(outStarts, off)
		if done[l] {
			continue
		}
		done[l] = true
		begin, end := outStarts[l-1], len(out)
		if l < len(outStarts) {
			end = outStarts[l] - 1
		}
		var cols []srcPos
		for j := begin; j < end; {
			_, size := utf8.DecodeRune(out[j:])
			o := int(origin[j])
			if o >= len(src) {
				o = len(src)
			}
			cols = append(cols, srcCol(o))
			j += size
		}
		if len(cols) == 0 { // an empty line: point at the line itself
			cols = nil
		}
		m.lines[int32(l)] = cols
	}
	return m
}

func lineStarts(b []byte) []int {
	starts := make([]int, 1, bytes.Count(b, []byte{'\n'})+1)
	for i, c := range b {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// Pos maps a 1-based (line, column) of the translated text to the source.
func (m *PosMap) Pos(line, col int32) (int32, int32) {
	if m == nil || col < 1 {
		return line, col
	}
	cols, ok := m.lines[line]
	if !ok || len(cols) == 0 {
		return line, col
	}
	if int(col-1) < len(cols) {
		p := cols[col-1]
		return p.line, p.col
	}
	// past the end of the line: keep the distance from the last rune
	last := cols[len(cols)-1]
	return last.line, last.col + col - int32(len(cols))
}

// Col is the column part of Pos.
func (m *PosMap) Col(line, col int32) int32 {
	_, c := m.Pos(line, col)
	return c
}
