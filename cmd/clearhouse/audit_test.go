package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

// TestAuditExportAndVerifyFromTheCommandLine: a change made from the command line is
// recorded as the operating-system user; audit export writes it as CSV and JSON
// lines; verify passes on a whole trail and names an edited row (exit 1).
func TestAuditExportAndVerifyFromTheCommandLine(t *testing.T) {
	t.Parallel()
	db := storetest.MigratedFile(t) // migrate then finds nothing pending
	if code, _, errOut := runCLI(t, "", "migrate", "--db", db); code != 0 {
		t.Fatal(errOut)
	}
	if code, _, errOut := runCLI(t, "", "team", "add", "--id", "search", "--budget", "1,000", "--db", db); code != 0 {
		t.Fatal(errOut)
	}
	code, out, errOut := runCLI(t, "", "audit", "export", "--format", "jsonl", "--action", "team.", "--db", db)
	if code != 0 {
		t.Fatalf("audit export: %d %s", code, errOut)
	}
	var row audit.JSONRow
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &row); err != nil {
		t.Fatalf("%v: %q", err, out)
	}
	if row.Action != "team.add" || row.Object != "team:search" || row.Actor != cliActor().String() || !strings.HasPrefix(row.Actor, "cli ") ||
		string(row.After) != `{"approval_threshold":0,"budget":1000000000,"name":"search"}` {
		t.Errorf("exported row = %+v (after %s)", row, row.After)
	}
	code, out, _ = runCLI(t, "", "audit", "export", "--from", "2000-01-01", "--db", db)
	if code != 0 || !strings.HasPrefix(out, strings.Join(audit.CSVHeader, ",")+"\n") || !strings.Contains(out, ",team.add,team:search,") {
		t.Errorf("audit export as CSV: %d\n%s", code, out)
	}
	for _, bad := range [][]string{{"--format", "xml"}, {"--from", "yesterday"}} {
		if code, _, _ := runCLI(t, "", append([]string{"audit", "export", "--db", db}, bad...)...); code != 2 {
			t.Errorf("audit export %v: exit %d, want 2", bad, code)
		}
	}
	if code, out, _ := runCLI(t, "", "verify", "--db", db); code != 0 {
		t.Fatalf("verify of a whole trail: %d\n%s", code, out)
	}
	s, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Write.Transaction(func(tx *gorm.DB) error {
		for _, q := range []string{"DROP TRIGGER audit_no_update", `UPDATE audit SET after_json = '{"budget":9}' WHERE action = 'team.add'`} {
			if err := tx.Exec(q).Error; err != nil {
				return err
			}
		}
		return nil
	})
	s.Close()
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, "", "verify", "--db", db)
	if code != 1 || !strings.Contains(out, "violation: audit trail content: row ") {
		t.Errorf("verify of an edited trail: %d\n%s", code, out)
	}
}

// TestRestoreIsRecordedInTheRestoredTrail: restore appends database.restore, by the
// command line's user and naming the backup, to the trail of the database it puts in
// place, whose chain stays whole.
func TestRestoreIsRecordedInTheRestoredTrail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	live, backup, restored := storetest.MigratedFile(t), filepath.Join(dir, "b.db"), filepath.Join(dir, "restored.db")
	for _, args := range [][]string{{"migrate", "--db", live}, {"team", "add", "--id", "search", "--db", live}, {"backup", "--db", live, backup},
		{"restore", "--db", restored, backup}} {
		if code, out, errOut := runCLI(t, "", args...); code != 0 {
			t.Fatalf("%v: %d %s %s", args, code, out, errOut)
		}
	}
	code, out, _ := runCLI(t, "", "audit", "export", "--format", "jsonl", "--db", restored)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var last audit.JSONRow
	if code != 0 || len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &last) != nil {
		t.Fatalf("export of the restored trail: %d\n%s", code, out)
	}
	if last.Action != "database.restore" || last.Object != "database:"+restored || last.Actor != cliActor().String() || string(last.After) != `{"backup":"`+backup+`"}` {
		t.Errorf("last row = %+v (after %s)", last, last.After)
	}
	if code, out, _ := runCLI(t, "", "verify", "--db", restored); code != 0 {
		t.Errorf("verify of the restored database: %d\n%s", code, out)
	}
}

// TestVerifyChecksTheTrailOnBothDatabases: verify's check of the trail finds a
// deleted row on SQLite and PostgreSQL alike.
func TestVerifyChecksTheTrailOnBothDatabases(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		ctx := context.Background()
		for _, obj := range []string{"team:a", "team:b", "team:c"} {
			if err := db.Write.Transaction(func(tx *gorm.DB) error {
				return audit.Record(ctx, tx, audit.Event{Action: "team.add", Object: obj})
			}); err != nil {
				t.Fatal(err)
			}
		}
		if vs, err := server.Verify(ctx, db); err != nil || len(vs) != 0 {
			t.Fatalf("verify of a whole trail: %v %v", vs, err)
		}
		drop := []string{"DROP TRIGGER audit_no_delete", "DELETE FROM audit WHERE seq = 2"}
		if db.Dialect == store.Postgres {
			drop[0] = "ALTER TABLE audit DISABLE TRIGGER audit_no_change"
		}
		if err := db.Write.Transaction(func(tx *gorm.DB) error {
			for _, q := range drop {
				if err := tx.Exec(q).Error; err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		vs, err := server.Verify(ctx, db)
		if err != nil || len(vs) != 2 || vs[0].Check != "audit trail numbering" {
			t.Errorf("verify after deleting row 2: %v %v", vs, err)
		}
	})
}
