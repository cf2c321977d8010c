package chrome

import "strconv"

// Identity is a store's network identity at its browser's launch (SPEC §16).
type Identity struct {
	// Proxy is the upstream proxy's whole URL, credentials included: it goes to the keeper on its stdin,
	// never on a command line. ForwardPort is the loopback port of the keeper's forwarder, which Chromium
	// uses as its proxy; Store names the store on the forwarder's error page.
	Proxy       string
	ForwardPort int
	Store       string
	Timezone    string // the browser's TZ
	Lang        string // --lang and --accept-lang
}

// args are Chromium's switches for the identity: every request to the forwarder (loopback too: nothing
// bypasses it) and WebRTC only over the proxy, so nothing leaves the machine beside it; the language.
func (id Identity) args() []string {
	var args []string
	if id.Proxy != "" {
		args = append(args, "--proxy-server=http://127.0.0.1:"+strconv.Itoa(id.ForwardPort),
			"--proxy-bypass-list=<-loopback>", "--force-webrtc-ip-handling-policy=disable_non_proxied_udp")
	}
	if id.Lang != "" {
		args = append(args, "--lang="+id.Lang, "--accept-lang="+id.Lang)
	}
	return args
}
