package state

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"vibebrowser/mux/errdefs"
)

func TestDownloads(t *testing.T) {
	db := openTest(t)
	ctx := context.Background()
	s := mustStore(t, db, "Shop")
	at := time.Unix(1700000000, 0)
	rec := func(key, task, dir, name string, sec int64) Download {
		t.Helper()
		d, err := db.RecordDownload(ctx, Download{Key: key, TaskID: task, ClientID: task + "-w1", OwnerDir: dir, GUID: "g-" + name,
			URL: "http://x/" + name, Name: name, Path: "/d/" + dir + "/" + name, Size: 3, SHA256: "abc", At: at.Add(time.Duration(sec) * time.Second)})
		if err != nil {
			t.Fatalf("RecordDownload(%s): %v", name, err)
		}
		return d
	}
	first := rec(s.ID, "a1b2c3d4", "a1b2c3d4", "one.csv", 2)
	rec(s.ID, "a1b2c3d4", "a1b2c3d4", "zero.csv", 1)
	rec(s.ID, "", "aux", "aux.csv", 3)
	rec(webKey, "e5f6a7b8", "e5f6a7b8", "web.csv", 4)
	if first.ID == 0 {
		t.Error("RecordDownload returned no id")
	}
	names := func(f DownloadFilter) []string {
		t.Helper()
		ds, err := db.ListDownloads(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
		}
		return out
	}
	tests := []struct {
		name string
		f    DownloadFilter
		want []string
	}{
		{"all", DownloadFilter{}, []string{"zero.csv", "one.csv", "aux.csv", "web.csv"}},
		{"store", DownloadFilter{Key: s.ID}, []string{"zero.csv", "one.csv", "aux.csv"}},
		{"task", DownloadFilter{TaskID: "a1b2c3d4"}, []string{"zero.csv", "one.csv"}},
		{"web task", DownloadFilter{Key: webKey, TaskID: "e5f6a7b8"}, []string{"web.csv"}},
		{"nothing", DownloadFilter{Key: s.ID, TaskID: "e5f6a7b8"}, nil},
		{"by id", DownloadFilter{ID: first.ID}, []string{"one.csv"}},
		{"newest two", DownloadFilter{Limit: 2}, []string{"aux.csv", "web.csv"}},
		{"store's newest", DownloadFilter{Key: s.ID, Limit: 1}, []string{"aux.csv"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(tt.f); !slices.Equal(got, tt.want) {
				t.Errorf("ListDownloads(%+v) = %q; want %q", tt.f, got, tt.want)
			}
		})
	}
	sums, err := db.DownloadBytes(ctx)
	want := map[DownloadOwner]int64{{s.ID, "a1b2c3d4"}: 6, {s.ID, "aux"}: 3, {webKey, "e5f6a7b8"}: 3}
	if err != nil || !maps.Equal(sums, want) {
		t.Errorf("DownloadBytes = %v, %v; want %v", sums, err, want)
	}
	ds, _ := db.ListDownloads(ctx, DownloadFilter{TaskID: "a1b2c3d4"})
	if d := ds[1]; d != first {
		t.Errorf("ListDownloads row = %+v; want %+v", d, first)
	}
	if n, err := db.DeleteDownloads(ctx, s.ID, "a1b2c3d4"); err != nil || n != 2 {
		t.Errorf("DeleteDownloads = %d, %v; want 2", n, err)
	}
	if got := names(DownloadFilter{}); !slices.Equal(got, []string{"aux.csv", "web.csv"}) {
		t.Errorf("after DeleteDownloads: %q", got)
	}
	for _, key := range []string{"nosuch", ReservedKeyPrefix} {
		if _, err := db.RecordDownload(ctx, Download{Key: key, OwnerDir: "x", GUID: "g", Name: "n", Path: "/p", At: at}); !errors.Is(err, errdefs.ErrNotFound) {
			t.Errorf("RecordDownload for key %q = %v; want errdefs.ErrNotFound (neither a store nor a reserved key)", key, err)
		}
	}
	if _, err := db.RecordDownload(ctx, Download{Key: s.ID, OwnerDir: "x", GUID: "g", Path: "/p", At: at}); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("RecordDownload without a name = %v; want errdefs.ErrInvalid", err)
	}
	if err := db.DeleteStore(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if got := names(DownloadFilter{}); !slices.Equal(got, []string{"web.csv"}) {
		t.Errorf("after DeleteStore: %q; want only the web browser's", got)
	}
}
