//go:build ignore

// pagecheck fails on a blank screenshot: it reads each PNG named on the
// command line and exits 1 unless at least 1% of its pixels differ from the
// most common colour (a page's background) and the picture holds at least
// 3 colours. CI runs it on Chromium's screenshots (.ci/pictures.sh):
//
//	go run .ci/pagecheck.go /tmp/fusion-screenshots/*.png
package main

import (
	"fmt"
	"image/png"
	"os"
)

func main() {
	failed := false
	for _, name := range os.Args[1:] {
		if err := check(name); err != nil {
			fmt.Fprintf(os.Stderr, "pagecheck: %s: %v\n", name, err)
			failed = true
			continue
		}
		fmt.Printf("pagecheck: %s: not blank\n", name)
	}
	if failed || len(os.Args) < 2 {
		os.Exit(1)
	}
}

func check(name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		return fmt.Errorf("decoding the PNG: %w", err)
	}
	counts := map[[4]uint32]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			counts[[4]uint32{r, g, bl, a}]++
		}
	}
	top := 0
	for _, n := range counts {
		top = max(top, n)
	}
	total := b.Dx() * b.Dy()
	if total == 0 {
		return fmt.Errorf("no pixels")
	}
	other := float64(total-top) / float64(total)
	if len(counts) < 3 || other < 0.01 {
		return fmt.Errorf("blank: %d colours, %.2f%% of %d pixels differ from the background", len(counts), 100*other, total)
	}
	return nil
}
