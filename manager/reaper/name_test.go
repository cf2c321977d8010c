package reaper

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseName(t *testing.T) {
	slugs := []string{"shop", "shop-eu", "store-0b0d4497", "a-12345678", "a"}
	tests := []struct {
		name   string
		slug   string
		task8  string
		worker int
		ok     bool
	}{
		{name: "shop", slug: "shop", ok: true},
		{name: "shop-aux", slug: "shop", ok: true},
		{name: "shop-a1b2c3d4", slug: "shop", task8: "a1b2c3d4", ok: true},
		{name: "shop-A1B2C3D4", slug: "shop", task8: "A1B2C3D4", ok: true},
		{name: "shop-a1b2c3d4-w1", slug: "shop", task8: "a1b2c3d4", worker: 1, ok: true},
		{name: "shop-a1b2c3d4-w12", slug: "shop", task8: "a1b2c3d4", worker: 12, ok: true},
		{name: "shop-eu", slug: "shop-eu", ok: true},
		{name: "shop-eu-aux", slug: "shop-eu", ok: true},
		{name: "shop-eu-a1b2c3d4-w3", slug: "shop-eu", task8: "a1b2c3d4", worker: 3, ok: true},
		{name: "web", slug: "web", ok: true},
		{name: "web-a1b2c3d4", slug: "web", task8: "a1b2c3d4", ok: true},
		{name: "web-a1b2c3d4-w2", slug: "web", task8: "a1b2c3d4", worker: 2, ok: true},
		// CJK store: its slug ends in 8 hex characters and must not read as a task tail.
		{name: "store-0b0d4497", slug: "store-0b0d4497", ok: true},
		{name: "store-0b0d4497-aux", slug: "store-0b0d4497", ok: true},
		{name: "store-0b0d4497-a1b2c3d4", slug: "store-0b0d4497", task8: "a1b2c3d4", ok: true},
		{name: "store-0b0d4497-a1b2c3d4-w1", slug: "store-0b0d4497", task8: "a1b2c3d4", worker: 1, ok: true},
		// Longest slug first, a shorter one when the rest fits no form after the longer.
		{name: "a-12345678", slug: "a-12345678", ok: true},
		{name: "a-12345678-w2", slug: "a", task8: "12345678", worker: 2, ok: true},
		{name: "a-12345678-deadbeef", slug: "a-12345678", task8: "deadbeef", ok: true},
		// Not forms of any known slug.
		{name: "store-0b0d4498", ok: false},
		{name: "other-a1b2c3d4", ok: false},
		{name: "web-aux", ok: false},
		{name: "shop-a1b2c3d", ok: false},
		{name: "shop-a1b2c3dz", ok: false},
		{name: "shop-a1b2c3d4e", ok: false},
		{name: "shop-a1b2c3d4-w0", ok: false},
		{name: "shop-a1b2c3d4-w01", ok: false},
		{name: "shop-a1b2c3d4-w", ok: false},
		{name: "shop-a1b2c3d4-wx", ok: false},
		{name: "shop-a1b2c3d4-w1-w2", ok: false},
		{name: "shop-a1b2c3d4-aux", ok: false},
		{name: "shop-", ok: false},
		{name: "shopa1b2c3d4", ok: false},
		{name: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			slug, task8, worker, ok := ParseName(tt.name, slugs)
			if slug != tt.slug || task8 != tt.task8 || worker != tt.worker || ok != tt.ok {
				t.Errorf("ParseName(%q) = %q, %q, %d, %v; want %q, %q, %d, %v",
					tt.name, slug, task8, worker, ok, tt.slug, tt.task8, tt.worker, tt.ok)
			}
		})
	}
}

// TestParseNameSlugOrder: the answer does not depend on the order the slugs come in, and "web" needs no listing.
func TestParseNameSlugOrder(t *testing.T) {
	a := []string{"store", "store-0b0d4497", "", "store"}
	b := []string{"store-0b0d4497", "store"}
	for _, name := range []string{"store-0b0d4497", "store-0b0d4497-a1b2c3d4", "store-a1b2c3d4", "web-a1b2c3d4"} {
		s1, t1, w1, ok1 := ParseName(name, a)
		s2, t2, w2, ok2 := ParseName(name, b)
		if s1 != s2 || t1 != t2 || w1 != w2 || ok1 != ok2 {
			t.Errorf("ParseName(%q) depends on slug order: %q %q %d %v vs %q %q %d %v", name, s1, t1, w1, ok1, s2, t2, w2, ok2)
		}
	}
	if slug, task8, _, ok := ParseName("store-0b0d4497", a); !ok || slug != "store-0b0d4497" || task8 != "" {
		t.Errorf("ParseName(%q) = %q, %q, %v; want the bare CJK store, no task", "store-0b0d4497", slug, task8, ok)
	}
	if slug, task8, _, ok := ParseName("web-a1b2c3d4", nil); !ok || slug != "web" || task8 != "a1b2c3d4" {
		t.Errorf("ParseName(%q, nil) = %q, %q, %v; want web, a1b2c3d4", "web-a1b2c3d4", slug, task8, ok)
	}
}

func FuzzParseName(f *testing.F) {
	for _, s := range []string{"shop", "shop-aux", "shop-a1b2c3d4", "shop-a1b2c3d4-w3", "web-00000000",
		"store-0b0d4497", "store-0b0d4497-a1b2c3d4-w1", "x-a1b2c3d4-w01", "-", "web-aux"} {
		f.Add(s, "shop,store-0b0d4497,store")
	}
	f.Fuzz(func(t *testing.T, name, slugList string) {
		slugs := strings.Split(slugList, ",")
		slug, task8, worker, ok := ParseName(name, slugs)
		if !ok {
			if slug != "" || task8 != "" || worker != 0 {
				t.Fatalf("ParseName(%q) = %q, %q, %d, false; want zero values", name, slug, task8, worker)
			}
			return
		}
		if slug != "web" && !slices.Contains(slugs, slug) {
			t.Fatalf("ParseName(%q) slug %q is not a known slug %q", name, slug, slugs)
		}
		if task8 != "" && (len(task8) != 8 || !isHex(task8)) {
			t.Fatalf("ParseName(%q) task8 %q is not 8 hex characters", name, task8)
		}
		if worker < 0 || worker > 0 && task8 == "" {
			t.Fatalf("ParseName(%q) worker %d without a task", name, worker)
		}
		// The parts rebuild the name exactly.
		var rebuilt string
		switch {
		case task8 == "" && name == slug:
			rebuilt = slug
		case task8 == "":
			rebuilt = slug + "-aux"
		case worker == 0:
			rebuilt = slug + "-" + task8
		default:
			rebuilt = fmt.Sprintf("%s-%s-w%d", slug, task8, worker)
		}
		if rebuilt != name {
			t.Fatalf("ParseName(%q) = %q, %q, %d; rebuilds as %q", name, slug, task8, worker, rebuilt)
		}
		// A longer known slug that the name is, or starts a form of, always wins over a shorter one.
		for _, s := range slugs {
			if len(s) > len(slug) && name == s {
				t.Fatalf("ParseName(%q) chose slug %q over the exact longer slug %q", name, slug, s)
			}
		}
	})
}
