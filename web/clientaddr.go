package web

import (
	"net"
	"net/http"
	"strings"
)

// trusted reports whether ip is one of the configured trusted proxies.
func (s *Server) trusted(ip net.IP) bool {
	for _, n := range s.cfg.TrustedProxies {
		if ip != nil && n.Contains(ip) {
			return true
		}
	}
	return false
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	return s.trusted(peerIP(r))
}

// peerIP is the address the request came from, or nil.
func peerIP(r *http.Request) net.IP {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return net.ParseIP(host)
}

// parseForwarded reads one X-Forwarded-For element: an address, maybe with a port.
func parseForwarded(s string) net.IP {
	s = strings.TrimSpace(s)
	if ip := net.ParseIP(s); ip != nil {
		return ip
	}
	if host, _, err := net.SplitHostPort(s); err == nil {
		return net.ParseIP(host)
	}
	return nil
}

// clientIP is the client's address: the peer's, or, when the peer is a trusted proxy,
// the rightmost address in X-Forwarded-For that is not itself a trusted proxy (each
// proxy appends the address it got the request from, so everything to the left of
// that is the client's to make up). An element that is not an address stops the walk
// at the last proxy. Nil only when the peer's address is unknown.
func (s *Server) clientIP(r *http.Request) net.IP {
	ip := peerIP(r)
	if !s.trusted(ip) {
		return ip
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0; i-- {
		hop := parseForwarded(hops[i])
		if hop == nil {
			return ip
		}
		ip = hop
		if !s.trusted(ip) {
			return ip
		}
	}
	return ip
}
