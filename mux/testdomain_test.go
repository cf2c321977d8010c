package mux

// The fake browser's own Test domain (fake_test.go): methods no Chromium has, which the tests use to make the
// fake misbehave (fragmented, big or pinging answers). The table forwards them anywhere, for the tests only.
func init() { domainRoutes["Test"] = route{where: onAny} }
