package mux

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/draw"
	"image/jpeg"
)

// Thumbnails. Chrome paints a hidden tab (every tab of a headless window but the one in front: an agent's
// background tab) only for a capture, and answers a capture of one only once another frame of the tab
// follows the one the capture made it draw. A still page draws no other: measured on Chromium 156, every
// other capture of a still background tab got no answer in 3 s, and the UI showed its thumbnail stale.
// With a screencast on the tab, Chrome answers every capture (24 of 24 measured, in about 50 ms, each
// showing the page as it was just changed): so a thumbnail runs the smallest screencast while it captures.
// The page sees nothing of either (it stays hidden: no visibilitychange, focus or resize).
//
// No clip: for a clip Chrome resizes the page's view and emulates the device metrics of the operator's session
// until the capture is answered, so a capture left waiting left an agent's page at the thumbnail's size
// (measured: a 500×400 viewport its agent had set became 320×256) and the agent's own device metrics gone.
// The whole viewport is captured as it is and scaled down here.

// thumbQuality is the quality of a capture that is scaled down afterwards: high enough that the capture's
// own artefacts do not survive the scaling.
const thumbQuality = 90

// thumbCast is the screencast that keeps a capture of a hidden tab answered: its frames are not used.
var thumbCast = json.RawMessage(`{"format":"jpeg","quality":1,"maxWidth":16,"maxHeight":16}`)

// Thumbnail captures a JPEG of a page's whole viewport, scaled down to at most maxWidth pixels wide (0:
// unscaled), at quality 1-100 (0: 60; a capture already no wider than maxWidth comes as Chrome made it, at
// a quality of at least that). It uses a short-lived operator session; ctx bounds the whole capture. The
// capture changes nothing the page or its owner can see: no activation, focus, viewport or emulation.
func (o *Operator) Thumbnail(ctx context.Context, targetID string, maxWidth, quality int) ([]byte, error) {
	m := o.m
	if quality <= 0 || quality > 100 {
		quality = 60
	}
	s, err := o.attach(ctx, targetID, nil)
	if err != nil {
		return nil, err
	}
	defer o.closeSession(s)
	q := quality
	if maxWidth > 0 {
		q = max(quality, thumbQuality)
	}
	m.mu.Lock()
	m.sendInternalLocked("Page.startScreencast", thumbCast, s.id, nil) // its frames go nowhere (s has no view)
	m.mu.Unlock()
	res, err := o.call(ctx, "Page.captureScreenshot", json.RawMessage(fmt.Sprintf(`{"format":"jpeg","quality":%d}`, q)), s.id)
	m.mu.Lock()
	if o.sessions[s.id] == s {
		m.sendInternalLocked("Page.stopScreencast", nil, s.id, nil)
	}
	m.mu.Unlock()
	if err != nil {
		return nil, err
	}
	var shot struct {
		Data []byte `json:"data"` // base64 in JSON: decoded by encoding/json
	}
	if err := json.Unmarshal(res, &shot); err != nil {
		return nil, fmt.Errorf("mux: Page.captureScreenshot: %w", err)
	}
	return scaleJPEG(shot.Data, maxWidth, quality)
}

// scaleJPEG scales a JPEG down to maxWidth pixels wide (0, or an image no wider: b as it is).
func scaleJPEG(b []byte, maxWidth, quality int) ([]byte, error) {
	if maxWidth <= 0 {
		return b, nil
	}
	cfg, err := jpeg.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("mux: thumbnail: %w", err)
	}
	if cfg.Width <= maxWidth {
		return b, nil
	}
	img, err := jpeg.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("mux: thumbnail: %w", err)
	}
	var out bytes.Buffer
	if err := jpeg.Encode(&out, shrink(img, maxWidth), &jpeg.Options{Quality: quality}); err != nil {
		return nil, fmt.Errorf("mux: thumbnail: %w", err)
	}
	return out.Bytes(), nil
}

// shrink scales img down to w pixels wide (fewer than it has), keeping its aspect, by averaging the pixels
// each new pixel covers: a box filter, so text and thin lines blur a little instead of breaking up.
func shrink(img image.Image, w int) *image.RGBA {
	b := img.Bounds()
	src := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(src, src.Rect, img, b.Min, draw.Src) // draw's fast path for a decoded JPEG (YCbCr)
	sw, sh := b.Dx(), b.Dy()
	h := max(1, (sh*w+sw/2)/sw)
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	// span[i] is the first source column (row) of destination column (row) i; i+1's first is one past its last.
	span := func(n, of int) []int {
		s := make([]int, n+1)
		for i := range s {
			s[i] = i * of / n
		}
		return s
	}
	xs, ys := span(w, sw), span(h, sh)
	sums := make([]uint32, 4*w)
	for y := range h {
		clear(sums)
		for sy := ys[y]; sy < ys[y+1]; sy++ {
			row := src.Pix[sy*src.Stride:]
			for x := range w {
				s := sums[4*x : 4*x+4]
				for sx := xs[x]; sx < xs[x+1]; sx++ {
					p := row[4*sx : 4*sx+4]
					s[0] += uint32(p[0])
					s[1] += uint32(p[1])
					s[2] += uint32(p[2])
					s[3] += uint32(p[3])
				}
			}
		}
		out := dst.Pix[y*dst.Stride:]
		for x := range w {
			n := uint32((xs[x+1] - xs[x]) * (ys[y+1] - ys[y]))
			for c := range 4 {
				out[4*x+c] = uint8((sums[4*x+c] + n/2) / n)
			}
		}
	}
	return dst
}
