// Package mailer sends the market's notification emails through an SMTP server.
// It knows nothing of the market: it is given a recipient, a subject and a body.
package mailer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"mime"
	"net"
	"net/mail"
	"net/smtp"
	"strings"
	"time"
)

// Config is where and as whom to send.
type Config struct {
	Addr     string // host:port of the SMTP server
	From     string // the sender's address, e.g. "Clearhouse <market@example.com>"
	Username string // optional: authenticate with PLAIN (only over TLS or to localhost)
	Password string
	Timeout  time.Duration // for the whole conversation; 0 is 30s
}

// Enabled reports whether a mail server is configured.
func (c Config) Enabled() bool { return c.Addr != "" }

// Validate checks the configuration and names the setting at fault. An empty
// configuration (no mail server) is valid.
func (c Config) Validate() error {
	if c.Addr == "" {
		if c.From != "" || c.Username != "" {
			return errors.New("--smtp-addr: set it (host:port) to send email, or leave --smtp-from and --smtp-user empty")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(c.Addr)
	if err != nil || host == "" || port == "" {
		return fmt.Errorf("--smtp-addr %q: must be host:port, such as mail.example.com:587", c.Addr)
	}
	if c.From == "" {
		return errors.New("--smtp-from: give the address emails come from, such as \"Clearhouse <market@example.com>\"")
	}
	if _, err := mail.ParseAddress(c.From); err != nil {
		return fmt.Errorf("--smtp-from %q: not an email address: %v", c.From, err)
	}
	if (c.Username == "") != (c.Password == "") {
		return errors.New("--smtp-user and CLEARHOUSE_SMTP_PASSWORD: give both, or neither")
	}
	if c.Timeout < 0 {
		return fmt.Errorf("--smtp-timeout %s: must not be negative", c.Timeout)
	}
	return nil
}

// Send delivers one plain-text message to one recipient. It uses STARTTLS when the
// server offers it, and gives up after the configured timeout.
func (c Config) Send(ctx context.Context, to, subject, body string) error {
	rcpt, err := mail.ParseAddress(to)
	if err != nil {
		return fmt.Errorf("recipient %q: %v", to, err)
	}
	from, _ := mail.ParseAddress(c.From)
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", c.Addr)
	if err != nil {
		return err
	}
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	host, _, _ := net.SplitHostPort(c.Addr)
	cl, err := smtp.NewClient(conn, host)
	if err != nil {
		conn.Close()
		return err
	}
	defer cl.Close()
	if ok, _ := cl.Extension("STARTTLS"); ok {
		if err := cl.StartTLS(&tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}); err != nil {
			return err
		}
	}
	if c.Username != "" {
		if err := cl.Auth(smtp.PlainAuth("", c.Username, c.Password, host)); err != nil {
			return err
		}
	}
	if err := cl.Mail(from.Address); err != nil {
		return err
	}
	if err := cl.Rcpt(rcpt.Address); err != nil {
		return err
	}
	w, err := cl.Data()
	if err != nil {
		return err
	}
	if _, err := w.Write(Message(from, rcpt, subject, body, time.Now())); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return cl.Quit()
}

// Message is the RFC 5322 text of a plain UTF-8 message, lines ending in CRLF.
func Message(from, to *mail.Address, subject, body string, at time.Time) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s\r\n", from.String())
	fmt.Fprintf(&b, "To: %s\r\n", to.String())
	fmt.Fprintf(&b, "Subject: %s\r\n", mime.QEncoding.Encode("utf-8", subject))
	fmt.Fprintf(&b, "Date: %s\r\n", at.UTC().Format(time.RFC1123Z))
	b.WriteString("MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: 8bit\r\n\r\n")
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\r\n")
	b.WriteString(body)
	if !strings.HasSuffix(body, "\r\n") {
		b.WriteString("\r\n")
	}
	return []byte(b.String())
}
