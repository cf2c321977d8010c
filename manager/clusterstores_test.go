package manager_test

import (
	"strings"
	"testing"

	"vibebrowser/manager/api"
)

// On a single host, store add --host is refused naming the rule, and no store is added.
func TestStoreHostRefusedOnSingleHost(t *testing.T) {
	d := startDaemon(t, nil, true)
	_, err := d.client.CreateStore(bg, api.StoreSpec{Name: "Acme", Host: "host3"})
	if err == nil || !api.IsCode(err, api.CodeBadRequest) || !strings.Contains(err.Error(), "single host") {
		t.Fatalf("CreateStore(Acme, --host host3) on a single host = %v; want bad_request, naming the single host", err)
	}
	stores, err := d.client.ListStores(bg)
	if err != nil {
		t.Fatal(err)
	}
	if len(stores) != 0 {
		t.Errorf("stores after the refusal: %v; want none", stores)
	}
}
