// Package cdpwire is the CDP wire, for the mux and for code that must not link it (the keeper, the backends):
// the DevTools pipe's NUL-ended messages and its keeper's hello, a scanner of a message's id, method and
// sessionId, and the DevTools discovery endpoints and one-shot CDP calls.
package cdpwire
