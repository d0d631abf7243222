// Package mailertest is a tiny SMTP server for tests: it accepts every message
// sent to it on the loopback interface and keeps it in memory.
package mailertest

import (
	"bufio"
	"net"
	"strings"
	"sync"
	"testing"
)

// Message is one message the server accepted.
type Message struct {
	From string
	To   []string
	Data string // headers and body, lines joined with "\n", dots unstuffed
}

// Server is a running test SMTP server.
type Server struct {
	Addr string
	ln   net.Listener
	mu   sync.Mutex
	msgs []Message
	// Refuse, when set, makes the server answer every RCPT with this reply (such
	// as "450 mailbox busy"), to test retries.
	refuse string
	wg     sync.WaitGroup
}

// Start runs a server on a free loopback port until the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), ln: ln}
	s.wg.Add(1)
	go s.serve()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

// Refuse makes every later RCPT fail with reply ("" accepts again).
func (s *Server) Refuse(reply string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = reply
}

// Messages returns what the server has accepted so far.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Server) serve() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.session(c) }()
	}
}

func (s *Server) session(c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	reply := func(line string) { w.WriteString(line + "\r\n"); w.Flush() }
	reply("220 mailertest ready")
	var m Message
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		cmd := strings.ToUpper(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(cmd, "EHLO"), strings.HasPrefix(cmd, "HELO"):
			reply("250 mailertest")
		case strings.HasPrefix(cmd, "MAIL FROM:"):
			m = Message{From: strings.Trim(strings.TrimSpace(line)[len("MAIL FROM:"):], "<> ")}
			reply("250 ok")
		case strings.HasPrefix(cmd, "RCPT TO:"):
			s.mu.Lock()
			refuse := s.refuse
			s.mu.Unlock()
			if refuse != "" {
				reply(refuse)
				continue
			}
			m.To = append(m.To, strings.Trim(strings.TrimSpace(line)[len("RCPT TO:"):], "<> "))
			reply("250 ok")
		case cmd == "DATA":
			reply("354 end with <CRLF>.<CRLF>")
			var lines []string
			for {
				l, err := r.ReadString('\n')
				if err != nil {
					return
				}
				l = strings.TrimRight(l, "\r\n")
				if l == "." {
					break
				}
				lines = append(lines, strings.TrimPrefix(l, "."))
			}
			m.Data = strings.Join(lines, "\n")
			s.mu.Lock()
			s.msgs = append(s.msgs, m)
			s.mu.Unlock()
			reply("250 queued")
		case cmd == "RSET", cmd == "NOOP":
			reply("250 ok")
		case cmd == "QUIT":
			reply("221 bye")
			return
		default:
			reply("502 not implemented")
		}
	}
}
