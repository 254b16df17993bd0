package tensor

import (
	"slices"
	"sort"
	"strings"
	"unicode"
)

// Einsum evaluates an Einstein summation such as "ij,jk->ik" (numpy's
// rules): letters name axes, a letter repeated within one operand takes
// its diagonal, "..." stands for broadcast dimensions, and without "->"
// the output is the ellipsis dimensions then the letters used once, in
// alphabetical order. Each operand is permuted and reshaped onto one
// shared axis order, the operands are multiplied (broadcasting) and the
// axes missing from the output are summed: one fused reduce.
func Einsum(formula string, xs ...*Tensor) *Tensor {
	const op = "einsum"
	if e := firstErr(xs...); e != nil {
		return e
	}
	if len(xs) == 0 {
		return errorf(op, "no operands")
	}
	f := strings.ReplaceAll(formula, " ", "")
	lhs, rhs, explicit := strings.Cut(f, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(xs) {
		return errorf(op, "%q has %d operands, %d were given", formula, len(terms), len(xs))
	}
	// Labels: letters, and for the ellipsis runes counting from the right
	// (ellipsis dimensions line up from the right, numpy-style).
	const ell = rune(0x10000)
	nEll := 0
	labels := make([][]rune, len(xs))
	for i, term := range terms {
		var letters []rune
		before, after, hasEll := strings.Cut(term, "...")
		for _, r := range before + after {
			if !unicode.IsLetter(r) || r > unicode.MaxASCII {
				return errorf(op, "%q: operand %d has %q; use letters and one ...", formula, i, r)
			}
			letters = append(letters, r)
		}
		nd := xs[i].Ndim()
		if strings.Contains(after, "...") || (!hasEll && len(letters) != nd) || (hasEll && len(letters) > nd) {
			return errorf(op, "%q: operand %d (%q) does not fit its shape %s", formula, i, term, FormatShape(xs[i].node.Shape))
		}
		var ls []rune
		for _, r := range before {
			ls = append(ls, r)
		}
		if hasEll {
			k := nd - len(letters)
			nEll = max(nEll, k)
			for j := range k {
				ls = append(ls, ell+rune(k-1-j)) // ell+0 is the last ellipsis dim
			}
		}
		for _, r := range after {
			ls = append(ls, r)
		}
		labels[i] = ls
	}
	// The implicit output counts labels as written (a repeated label is a
	// trace, "ii" is a scalar).
	count := map[rune]int{}
	for _, ls := range labels {
		for _, r := range ls {
			count[r]++
		}
	}
	// Diagonals first, so each operand names every label once.
	ops := slices.Clone(xs)
	for i := range ops {
		for {
			a, b := repeatedLabel(labels[i])
			if a < 0 {
				break
			}
			x, e := diagonal(ops[i], a, b)
			if e != nil {
				return e
			}
			ops[i] = x // the other axes in order, then the diagonal
			l := labels[i][a]
			var rest []rune
			for j, r := range labels[i] {
				if j != a && j != b {
					rest = append(rest, r)
				}
			}
			labels[i] = append(rest, l)
		}
	}
	// Sizes per label must agree (or be 1: broadcast).
	size := map[rune]int{}
	for i, ls := range labels {
		for j, r := range ls {
			s := ops[i].node.Shape[j]
			if old, ok := size[r]; ok && old != s && old != 1 && s != 1 {
				return errorf(op, "%q: label %c has sizes %d and %d", formula, r, old, s)
			}
			if old, ok := size[r]; !ok || old == 1 {
				size[r] = s
			}
		}
	}
	var out []rune
	if explicit {
		before, after, hasEll := strings.Cut(rhs, "...")
		for _, r := range before {
			out = append(out, r)
		}
		if hasEll {
			for j := nEll - 1; j >= 0; j-- {
				out = append(out, ell+rune(j))
			}
		}
		for _, r := range after {
			out = append(out, r)
		}
		seen := map[rune]bool{}
		for _, r := range out {
			if _, ok := size[r]; !ok || seen[r] {
				return errorf(op, "%q: output label %q is not an input label or is repeated", formula, r)
			}
			seen[r] = true
		}
	} else {
		for j := nEll - 1; j >= 0; j-- {
			out = append(out, ell+rune(j))
		}
		var once []rune
		for r, c := range count {
			if c == 1 && r < ell {
				once = append(once, r)
			}
		}
		sort.Slice(once, func(a, b int) bool { return once[a] < once[b] })
		out = append(out, once...)
	}
	all := slices.Clone(out)
	var summed []rune
	for _, ls := range labels {
		for _, r := range ls {
			if !slices.Contains(all, r) {
				all = append(all, r)
				summed = append(summed, r)
			}
		}
	}
	var prod *Tensor
	for i, x := range ops {
		var perm, shape []int
		for _, r := range all {
			if j := slices.Index(labels[i], r); j >= 0 {
				perm = append(perm, j)
				shape = append(shape, x.node.Shape[j])
			} else {
				shape = append(shape, 1)
			}
		}
		y := x.Permute(perm...).Reshape(shape...)
		if prod == nil {
			prod = y
		} else {
			prod = prod.Mul(y)
		}
	}
	full := make([]int, len(all))
	for i, r := range all {
		full[i] = size[r]
	}
	prod = prod.Expand(full...)
	if len(summed) == 0 {
		return prod
	}
	axes := make([]int, len(summed))
	for i := range summed {
		axes[i] = len(out) + i
	}
	return prod.Sum(false, axes...).Cast(prod.DType())
}

// repeatedLabel returns the first pair of positions with the same label.
func repeatedLabel(ls []rune) (int, int) {
	for a := range ls {
		for b := a + 1; b < len(ls); b++ {
			if ls[a] == ls[b] {
				return a, b
			}
		}
	}
	return -1, -1
}

// diagonal takes the diagonal of axes a and b (equal sizes) as a new last
// axis: the two axes moved last and flattened to n*n, padded by n to
// n*(n+1) and viewed as (n, n+1), whose first column is the diagonal.
func diagonal(x *Tensor, a, b int) (*Tensor, *Tensor) {
	s := x.node.Shape
	if s[a] != s[b] {
		return nil, errorf("einsum", "a repeated label needs equal sizes, got %d and %d in %s", s[a], s[b], FormatShape(s))
	}
	n := s[a]
	var perm, rest []int
	for i := range s {
		if i != a && i != b {
			perm = append(perm, i)
			rest = append(rest, s[i])
		}
	}
	perm = append(perm, a, b)
	y := x.Permute(perm...).Reshape(append(slices.Clone(rest), n*n)...)
	pads := make([][2]int, y.Ndim())
	pads[len(pads)-1] = [2]int{0, n}
	y = y.padZero(pads).Reshape(append(slices.Clone(rest), n, n+1)...)
	bounds := make([][2]int, y.Ndim())
	for i, d := range y.node.Shape {
		bounds[i] = [2]int{0, d}
	}
	bounds[len(bounds)-1] = [2]int{0, 1}
	return y.Shrink(bounds).Reshape(append(rest, n)...), nil
}
