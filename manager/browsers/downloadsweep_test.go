package browsers

import (
	"context"
	"slices"
	"testing"
	"time"

	"vibebrowser/integration/testkit"
	"vibebrowser/mux/downloads"
)

func TestSweepDownloadsAtBoot(t *testing.T) {
	f, _ := fakeFleet(t, nil)
	root := f.cfg.path("downloads")
	now := time.Now()
	testkit.WriteFiles(t, root, now,
		"shop/.incoming/0f3c.crdownload",
		"shop/.incoming/77aa",
		"shop/a1b2c3d4/report.csv",
		"shop/a1b2c3d4/.download-123"+downloads.PartialSuffix,
		"shop/aux/.download-9"+downloads.PartialSuffix,
		"shop/aux/kept.pdf",
	)
	if err := f.Boot(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"shop/a1b2c3d4/report.csv", "shop/aux/kept.pdf"}
	if got := testkit.Files(root); !slices.Equal(got, want) {
		t.Errorf("after the boot sweep: %q; want %q (no partial file left, every complete one kept)", got, want)
	}
}
