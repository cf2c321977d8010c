package localapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"vibebrowser/manager/api"
	"vibebrowser/manager/apierr"
	"vibebrowser/manager/browsers"
	"vibebrowser/manager/config"
	"vibebrowser/manager/snapshot"
	"vibebrowser/manager/tasks"
	"vibebrowser/manager/timeline"
	"vibebrowser/manager/ui"
	"vibebrowser/mux/clientid"
	"vibebrowser/state"
)

// fdPeerUID returns the uid of the process at the other end of a unix socket (LOCAL_PEERCRED).
func fdPeerUID(fd uintptr) (int, error) {
	cred, err := unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
	if err != nil {
		return -1, err
	}
	return int(cred.Uid), nil
}
