package setting_test

import (
	"testing"
	"time"

	"github.com/fusiongo/transport/env"
	"github.com/fusiongo/transport/internal/setting"
)

// TestBound: env.Off and any negative duration are no bound, zero for
// net/http; the rest is kept.
func TestBound(t *testing.T) {
	tests := []struct {
		in, want time.Duration
	}{
		{env.Off, 0},
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, time.Nanosecond},
		{90 * time.Second, 90 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.in.String(), func(t *testing.T) {
			if got := setting.Bound(tt.in); got != tt.want {
				t.Errorf("Bound(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestLimit: env.NoLimit and any negative count are no limit, zero for
// net/http; the rest is kept.
func TestLimit(t *testing.T) {
	tests := []struct {
		in, want int
	}{
		{env.NoLimit, 0},
		{-7, 0},
		{0, 0},
		{1, 1},
		{512, 512},
	}
	for _, tt := range tests {
		t.Run("", func(t *testing.T) {
			if got := setting.Limit(tt.in); got != tt.want {
				t.Errorf("Limit(%d) = %d, want %d", tt.in, got, tt.want)
			}
		})
	}
}
