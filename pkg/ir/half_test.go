package ir

import (
	"math"
	"testing"
)

func TestFloat16FromFloat32(t *testing.T) {
	tests := []struct {
		name string
		in   float32
		want uint16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"one third", 1.0 / 3, 0x3555},
		{"max finite 65504", 65504, 0x7bff},
		{"65519 rounds down to max", 65519, 0x7bff},
		{"65520 ties to Inf", 65520, 0x7c00},
		{"large overflows to Inf", 1e10, 0x7c00},
		{"large negative overflows to -Inf", -1e10, 0xfc00},
		{"float32 max", math.MaxFloat32, 0x7c00},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"smallest normal 2^-14", 0x1p-14, 0x0400},
		{"largest subnormal", 0x3ffp-24, 0x03ff},
		{"smallest subnormal 2^-24", 0x1p-24, 0x0001},
		{"negative smallest subnormal", -0x1p-24, 0x8001},
		{"2^-25 ties to even zero", 0x1p-25, 0x0000},
		{"-2^-25 ties to even -0", -0x1p-25, 0x8000},
		{"just above 2^-25 rounds up", 0x1.000002p-25, 0x0001},
		{"3*2^-25 ties to even 2^-23", 0x3p-25, 0x0002},
		{"2^-26 underflows", 0x1p-26, 0x0000},
		{"float32 smallest subnormal", math.SmallestNonzeroFloat32, 0x0000},
		{"largest subnormal rounds up to smallest normal", 0x7ffp-25, 0x0400},
		{"1+2^-11 ties to even 1", 1 + 0x1p-11, 0x3c00},
		{"1+3*2^-11 ties to even 1+2^-9", 1 + 0x3p-11, 0x3c02},
		{"1+2^-11+2^-23 rounds up", 1 + 0x1p-11 + 0x1p-23, 0x3c01},
		{"2047.5 mantissa carry bumps exponent", 2047.5, 0x6800},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Float16FromFloat32(tt.in); got != tt.want {
				t.Errorf("Float16FromFloat32(%g) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestFloat16FromFloat32NaN(t *testing.T) {
	tests := []struct {
		name string
		in   uint32 // float32 bits
		want uint16
	}{
		{"quiet NaN", 0x7fc00000, 0x7e00},
		{"negative quiet NaN", 0xffc00000, 0xfe00},
		{"signalling NaN with high payload is quieted", 0x7f802000, 0x7e01},
		{"NaN with only low payload bits stays NaN", 0x7f800001, 0x7e00},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Float16FromFloat32(math.Float32frombits(tt.in)); got != tt.want {
				t.Errorf("Float16FromFloat32(bits %#08x) = %#04x, want %#04x", tt.in, got, tt.want)
			}
		})
	}
}

func TestFloat16ToFloat32(t *testing.T) {
	tests := []struct {
		in   uint16
		want uint32 // float32 bits, so -0 and NaN payloads are checked too
	}{
		{0x0000, 0x00000000},
		{0x8000, 0x80000000},
		{0x3c00, 0x3f800000}, // 1
		{0xc000, 0xc0000000}, // -2
		{0x7bff, 0x477fe000}, // 65504
		{0x0400, 0x38800000}, // 2^-14
		{0x0001, 0x33800000}, // 2^-24
		{0x03ff, 0x387fc000}, // 1023 * 2^-24
		{0x8001, 0xb3800000}, // -2^-24
		{0x7c00, 0x7f800000}, // +Inf
		{0xfc00, 0xff800000}, // -Inf
		{0x7e00, 0x7fc00000}, // quiet NaN
		{0x7c01, 0x7f802000}, // signalling NaN keeps its payload
		{0x3555, 0x3eaaa000}, // 0.333251953125
		{0x3c01, 0x3f802000}, // 1 + 2^-10
		{0xfbff, 0xc77fe000}, // -65504
		{0x0200, 0x38000000}, // 2^-15
		{0x0003, 0x34400000}, // 3 * 2^-24
		{0x7bfe, 0x477fc000}, // 65472
		{0x5640, 0x42c80000}, // 100
		{0x2e66, 0x3dccc000}, // 0.0999755859375
		{0x1400, 0x3a800000}, // 2^-10
		{0x0010, 0x35800000}, // 16 * 2^-24 = 2^-20
	}
	for _, tt := range tests {
		got := math.Float32bits(Float16ToFloat32(tt.in))
		if got != tt.want {
			t.Errorf("Float16ToFloat32(%#04x) = bits %#08x, want %#08x", tt.in, got, tt.want)
		}
	}
}

// TestRoundTripExhaustive checks every binary16 pattern: ToFloat32 is exact,
// so converting back must give the same bits, except that NaNs only have to
// stay NaN (signalling NaNs are quieted).
func TestRoundTripExhaustive(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		h := uint16(i)
		f := Float16ToFloat32(h)
		back := Float16FromFloat32(f)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		if isNaN {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("Float16ToFloat32(%#04x) = %g, want NaN", h, f)
			}
			if back&0x7c00 != 0x7c00 || back&0x3ff == 0 || back&0x8000 != h&0x8000 {
				t.Fatalf("NaN %#04x round-tripped to non-NaN or lost sign: %#04x", h, back)
			}
			if h&0x200 != 0 && back != h {
				t.Fatalf("quiet NaN %#04x changed to %#04x", h, back)
			}
			continue
		}
		if back != h {
			t.Fatalf("round trip %#04x -> %g -> %#04x", h, f, back)
		}
	}
}

// TestRoundingBoundaries checks, for every pair of adjacent non-negative
// binary16 values a < b (with Inf standing in for 65536 after the maximum),
// that their midpoint rounds to the one with the even mantissa and that the
// float32 values one ulp either side of the midpoint round to the nearer one.
// The midpoint needs only 12 significant bits, so it is exact in float32.
func TestRoundingBoundaries(t *testing.T) {
	for a := uint16(0); a < 0x7c00; a++ {
		b := a + 1
		fa := float64(Float16ToFloat32(a))
		fb := 65536.0
		if b != 0x7c00 {
			fb = float64(Float16ToFloat32(b))
		}
		mid := float32((fa + fb) / 2)
		if float64(mid) != (fa+fb)/2 {
			t.Fatalf("midpoint of %#04x and %#04x not exact in float32", a, b)
		}
		even := a
		if a&1 == 1 {
			even = b
		}
		for _, sign := range []uint16{0, 0x8000} {
			s := float32(1)
			if sign != 0 {
				s = -1
			}
			if got := Float16FromFloat32(s * mid); got != even|sign {
				t.Fatalf("Float16FromFloat32(%g) = %#04x, want %#04x (tie to even)", s*mid, got, even|sign)
			}
			below := s * math.Nextafter32(mid, 0)
			if got := Float16FromFloat32(below); got != a|sign {
				t.Fatalf("Float16FromFloat32(%g) = %#04x, want %#04x", below, got, a|sign)
			}
			above := s * math.Nextafter32(mid, float32(math.Inf(1)))
			if got := Float16FromFloat32(above); got != b|sign {
				t.Fatalf("Float16FromFloat32(%g) = %#04x, want %#04x", above, got, b|sign)
			}
		}
	}
}

func BenchmarkFloat16FromFloat32(b *testing.B) {
	var sink uint16
	for i := 0; i < b.N; i++ {
		sink += Float16FromFloat32(float32(i) * 0.001)
	}
	_ = sink
}

func TestBFloat16(t *testing.T) {
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{0, 0x0000},
		{float32(math.Copysign(0, -1)), 0x8000},
		{1, 0x3f80},
		{-2, 0xc000},
		{1.0 / 3, 0x3eab}, // 0x3eaaaaab rounds up
		{math.Float32frombits(0x3f808000), 0x3f80}, // a tie rounds to even (down)
		{math.Float32frombits(0x3f818000), 0x3f82}, // a tie rounds to even (up)
		{math.MaxFloat32, 0x7f80},                  // overflows to Inf
		{float32(math.Inf(-1)), 0xff80},
		{math.Float32frombits(0x7f800001), 0x7fc0}, // a signalling NaN is quieted
		{0x1p-133, 0x0001},                         // subnormals round like the rest
	} {
		if got := BFloat16FromFloat32(tc.in); got != tc.want {
			t.Errorf("BFloat16FromFloat32(%g = %#x) = %#04x, want %#04x", tc.in, math.Float32bits(tc.in), got, tc.want)
		}
	}
	for _, h := range []uint16{0x3f80, 0xc000, 0x0001, 0x7f80, 0x8000} {
		if got := BFloat16FromFloat32(BFloat16ToFloat32(h)); got != h {
			t.Errorf("round trip of %#04x gives %#04x", h, got)
		}
	}
}
