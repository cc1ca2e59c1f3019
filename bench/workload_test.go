package main

import (
	"reflect"
	"testing"
	"time"
)

func TestInterleave(t *testing.T) {
	for _, c := range []struct {
		n, m int
		want []int
	}{
		// 0-9 are tickets, 10 and 11 Loggers: one Logger in each half.
		{10, 2, []int{0, 1, 2, 10, 3, 4, 5, 6, 7, 11, 8, 9}},
		{2, 2, []int{0, 2, 1, 3}},
		{3, 0, []int{0, 1, 2}},
		{0, 2, []int{0, 1}},
	} {
		if got := interleave(c.n, c.m); !reflect.DeepEqual(got, c.want) {
			t.Errorf("interleave(%d, %d) = %v, want %v", c.n, c.m, got, c.want)
		}
	}
}

func TestMedianRange(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want string
	}{
		{[]float64{1.88, 1.08, 1.27}, "**1.27×** (1.08–1.88×)"},
		{[]float64{1.5, 1.1, 1.2, 1.9}, "**1.35×** (1.10–1.90×)"},
		{[]float64{0.97}, "**0.97×** (0.97–0.97×)"},
	} {
		if got := medianRange(c.xs); got != c.want {
			t.Errorf("medianRange(%v) = %q, want %q", c.xs, got, c.want)
		}
	}
}

func TestChange(t *testing.T) {
	for _, c := range []struct {
		a, b float64 // seconds
		want string
	}{
		{26.3, 22.6, "+16%"},
		{22.9, 23.7, "-3%"},
		{24.08, 24.1, "+0%"}, // -0.08%: no "-0%"
		{24.1, 24.1, "+0%"},
	} {
		if got := change(time.Duration(c.a*float64(time.Second)), time.Duration(c.b*float64(time.Second))); got != c.want {
			t.Errorf("change(%v s, %v s) = %q, want %q", c.a, c.b, got, c.want)
		}
	}
}
