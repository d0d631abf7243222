package identity_test

import (
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
)

func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	if clearhouse.ErrorCode(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
}

// addTeam makes a team for members and owners to belong to. Teams are the market's
// (exchange.Market.AddTeam); identity only checks that one exists, so a row does.
func addTeam(t *testing.T, db *store.DB, id string) {
	t.Helper()
	if err := db.Write.Exec("INSERT INTO teams (id, name, created_at) VALUES (?, ?, ?)", id, id, time.Now()).Error; err != nil {
		t.Fatal(err)
	}
}

// addCluster makes a cluster for agent tokens to be bound to. Clusters are the
// market's (exchange.Market.AddCluster); identity only checks that one exists.
func addCluster(t *testing.T, db *store.DB, id string) {
	t.Helper()
	if err := db.Write.Exec("INSERT INTO clusters (id, name, created_at) VALUES (?, ?, ?)", id, id, time.Now()).Error; err != nil {
		t.Fatal(err)
	}
}
