package mailer_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/mailer/mailertest"
)

func TestSendDeliversAPlainUTF8Message(t *testing.T) {
	t.Parallel()
	srv := mailertest.Start(t)
	cfg := mailer.Config{Addr: srv.Addr, From: "Clearhouse <market@example.com>"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	body := "Auction #3 has settled.\n.\nOrder #7 won us-east/cpu +10 and paid $30.00."
	if err := cfg.Send(context.Background(), "mia@search.example.com", "Auction #3 settled — 1 of 1 orders won", body); err != nil {
		t.Fatal(err)
	}
	ms := srv.Messages()
	if len(ms) != 1 || ms[0].From != "market@example.com" || len(ms[0].To) != 1 || ms[0].To[0] != "mia@search.example.com" {
		t.Fatalf("messages %+v", ms)
	}
	for _, want := range []string{"Subject: =?utf-8?q?", "Content-Type: text/plain; charset=utf-8", "\n.\nOrder #7 won us-east/cpu +10"} {
		if !strings.Contains(ms[0].Data, want) {
			t.Errorf("message lacks %q:\n%s", want, ms[0].Data)
		}
	}
}

func TestSendReportsARefusal(t *testing.T) {
	t.Parallel()
	srv := mailertest.Start(t)
	srv.Refuse("450 mailbox busy")
	err := mailer.Config{Addr: srv.Addr, From: "market@example.com"}.Send(context.Background(), "mia@search.example.com", "s", "b")
	if err == nil || !strings.Contains(err.Error(), "mailbox busy") {
		t.Fatalf("a refused recipient: %v", err)
	}
	if len(srv.Messages()) != 0 {
		t.Fatal("a refused message was kept")
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		cfg  mailer.Config
		want string
	}{
		{mailer.Config{}, ""},
		{mailer.Config{From: "a@b.c"}, "--smtp-addr"},
		{mailer.Config{Addr: "mail.example.com", From: "a@b.c"}, "host:port"},
		{mailer.Config{Addr: "mail.example.com:587"}, "--smtp-from"},
		{mailer.Config{Addr: "mail.example.com:587", From: "not an address"}, "not an email address"},
		{mailer.Config{Addr: "mail.example.com:587", From: "a@b.c", Username: "u"}, "give both"},
		{mailer.Config{Addr: "mail.example.com:587", From: "a@b.c", Username: "u", Password: "p"}, ""},
	} {
		err := tc.cfg.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
