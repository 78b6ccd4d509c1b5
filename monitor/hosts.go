package monitor

import (
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
)

// hostCheck says which Host headers the page answers: an address of this
// machine (the one it is bound to, its interfaces', loopback) or
// localhost, and the names given (run --http-host). A browser sends the
// name it looked up, so a page of another site whose name an attacker
// points at this machine (DNS rebinding) comes with that name, and is
// refused: it must not read the config.
type hostCheck struct {
	mu    sync.Mutex
	names []string     // lower case, without a port
	addrs []netip.Addr // this machine's
}

func newHostCheck(names []string) *hostCheck {
	h := &hostCheck{names: []string{"localhost"}}
	for _, n := range names {
		h.add(n)
	}
	if as, err := net.InterfaceAddrs(); err == nil {
		for _, a := range as {
			if p, err := netip.ParsePrefix(a.String()); err == nil {
				h.addrs = append(h.addrs, p.Addr().Unmap())
			}
		}
	}
	return h
}

// add allows a name, or an address, with or without its port.
func (h *hostCheck) add(name string) {
	host := hostOnly(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, err := netip.ParseAddr(host); err == nil {
		h.addrs = append(h.addrs, a.Unmap())
		return
	}
	h.names = append(h.names, host)
}

// allowed reports whether a request's Host header names this machine.
func (h *hostCheck) allowed(hostHeader string) bool {
	host := hostOnly(hostHeader)
	if host == "" {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, err := netip.ParseAddr(host); err == nil {
		a = a.Unmap()
		return a.IsLoopback() || slices.Contains(h.addrs, a)
	}
	return slices.Contains(h.names, host) || strings.HasSuffix(host, ".localhost")
}

// refusal says why a Host is refused, and what to do.
func (h *hostCheck) refusal(hostHeader string) string {
	return "beamconnect's live page answers only to this machine's addresses and localhost, and to the names run --http-host gives: " +
		"the name " + quoteHost(hostHeader) + " is none of them (run with --http-host " + quoteHost(hostOnly(hostHeader)) + " to allow it)\n"
}

// hostOnly is a Host header's host, lower case, without port or brackets.
func hostOnly(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	return strings.TrimSuffix(s, ".")
}

func quoteHost(s string) string {
	if s == "" {
		return `""`
	}
	return s
}
