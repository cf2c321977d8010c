package mux

import (
	"bytes"
	"image"
	"image/color"
	"image/draw"
	"image/jpeg"
	"testing"
)

func TestScaleJPEG(t *testing.T) {
	tests := []struct {
		name     string
		w, h     int
		maxWidth int
		want     image.Point
	}{
		{"browser-use's background tab", 780, 437, 320, image.Pt(320, 179)},
		{"a wide page", 1920, 1080, 320, image.Pt(320, 180)},
		{"a tall phone page at dpr 3", 1170, 2532, 320, image.Pt(320, 693)},
		{"one pixel high", 1000, 1, 100, image.Pt(100, 1)},
		{"narrower than the limit", 300, 200, 320, image.Pt(300, 200)},
		{"no limit", 780, 437, 0, image.Pt(780, 437)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Left half black, right half white: the scaled image keeps the halves, grey only at the seam.
			src := image.NewRGBA(image.Rect(0, 0, tt.w, tt.h))
			draw.Draw(src, src.Rect, image.White, image.Point{}, draw.Src)
			draw.Draw(src, image.Rect(0, 0, tt.w/2, tt.h), image.NewUniform(color.Black), image.Point{}, draw.Src)
			var in bytes.Buffer
			if err := jpeg.Encode(&in, src, &jpeg.Options{Quality: 95}); err != nil {
				t.Fatal(err)
			}
			out, err := scaleJPEG(in.Bytes(), tt.maxWidth, 80)
			if err != nil {
				t.Fatalf("scaleJPEG(%dx%d, %d): %v", tt.w, tt.h, tt.maxWidth, err)
			}
			img, err := jpeg.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatalf("scaleJPEG(%dx%d, %d) is no JPEG: %v", tt.w, tt.h, tt.maxWidth, err)
			}
			size := img.Bounds().Size()
			if size != tt.want {
				t.Errorf("scaleJPEG(%dx%d, %d) = %v; want %v", tt.w, tt.h, tt.maxWidth, size, tt.want)
			}
			y := size.Y / 2
			if r, _, _, _ := img.At(size.X/4, y).RGBA(); r>>8 > 40 {
				t.Errorf("scaleJPEG(%dx%d, %d) at a quarter = %d; want black", tt.w, tt.h, tt.maxWidth, r>>8)
			}
			if r, _, _, _ := img.At(size.X*3/4, y).RGBA(); r>>8 < 215 {
				t.Errorf("scaleJPEG(%dx%d, %d) at three quarters = %d; want white", tt.w, tt.h, tt.maxWidth, r>>8)
			}
		})
	}
}
