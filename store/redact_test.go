package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/store"
)

func TestRedactHidesEveryPasswordForm(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"postgres://ana:s3cret@db:5432/market?sslmode=disable":          "postgres://ana:xxxxx@db:5432/market?sslmode=disable",
		"postgresql://ana:p%40ss@db/market":                             "postgresql://ana:xxxxx@db/market",
		"postgres://db/market?user=ana&password=s3cret&sslmode=require": "postgres://db/market?user=ana&password=xxxxx&sslmode=require",
		"postgres://ana:s3cret@db/market?PASSWORD=again":                "postgres://ana:xxxxx@db/market?PASSWORD=xxxxx",
		"host=db user=ana password=s3cret dbname=market":                "host=db user=ana password=xxxxx dbname=market",
		"host=db password='s3 cret' dbname=market":                      "host=db password=xxxxx dbname=market",
		"postgres://ana:s3%zzcret@db/market":                            "postgres://xxxxx@db/market",
		"postgres://ana@db/market":                                      "postgres://ana@db/market",
		"clearhouse.db":                                                 "clearhouse.db",
		"/var/lib/clearhouse/market.db":                                 "/var/lib/clearhouse/market.db",
	}
	for in, want := range cases {
		if got := store.Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
		if strings.Contains(store.Redact(in), "s3") {
			t.Errorf("Redact(%q) still shows the password", in)
		}
	}
}

func TestOpenErrorsDoNotShowThePassword(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: the connection fails and the error names the address.
	_, err := store.Open(context.Background(), "postgres://ana:s3cret-pw@127.0.0.1:1/market?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("connected to port 1")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("the error shows the password: %v", err)
	}
}
