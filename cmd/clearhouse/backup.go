package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

func newBackupCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backup FILE",
		Short: "Write a consistent copy of a live SQLite database to FILE (the server may keep running)",
		Long: `Write a consistent copy of the SQLite database to FILE, which must not exist, with
SQLite's VACUUM INTO: the copy is the database as of one commit, taken in a read
transaction while the server keeps taking orders. The copy is checked with SQLite's
integrity check before this exits 0. For PostgreSQL use pg_dump (docs/operating.md).`,
		Example: `  clearhouse backup --db /var/lib/clearhouse/clearhouse.db /backups/clearhouse-$(date +%F).db`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, dsn := cmd.Context(), dbFlag(cmd)
			db, err := store.Open(ctx, dsn)
			if err != nil {
				return &exitError{2, err}
			}
			defer db.Close()
			if err := store.Backup(ctx, db, args[0]); err != nil {
				return &exitError{1, err}
			}
			if err := checkBackup(ctx, args[0]); err != nil {
				return &exitError{1, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backed up %s to %s\n", dsn, args[0])
			return nil
		},
	}
	return cmd
}

// checkBackup opens the SQLite file at path and refuses it unless it is a sound
// Clearhouse database whose schema this binary knows.
func checkBackup(ctx context.Context, path string) error {
	if _, err := os.Stat(path); err != nil {
		return err
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer db.Close()
	var ok string
	if err := db.Read.WithContext(ctx).Raw("PRAGMA integrity_check").Scan(&ok).Error; err != nil || ok != "ok" {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s is not a sound SQLite database (integrity check: %q %v)", path, ok, err)
	}
	var tables int64
	if err := db.Read.WithContext(ctx).Raw(`SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('goose_db_version', 'auctions', 'ledger_entries')`).Scan(&tables).Error; err != nil || tables != 3 {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s is not a Clearhouse database (no migrations table, auctions or ledger)", path)
	}
	return store.CheckNotNewer(ctx, db)
}

func newRestoreCmd() *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "restore BACKUP",
		Short: "Replace a SQLite database with a backup, after checking the backup (stop the server first)",
		Long: `Replace the SQLite database --db with the backup file BACKUP. The backup is refused,
and nothing changes, unless it is a sound Clearhouse database whose schema this binary
may run on and every invariant 'clearhouse verify' checks holds in it: it is copied
beside --db and verified there before anything is replaced. An existing --db is
replaced only with --force, and is kept beside it as --db.before-restore-TIME (delete
it once you no longer need it). Restore refuses while a server or another command
uses --db (each holds --db.lock while it runs): stop the server first. A backup from
an older release is migrated when the server next starts.`,
		Example: `  clearhouse restore --db /var/lib/clearhouse/clearhouse.db --force /backups/clearhouse-2026-11-26.db`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, dsn := cmd.Context(), dbFlag(cmd)
			path, ok := store.SQLitePath(dsn)
			if !ok {
				return &exitError{2, errors.New("--db: restore replaces a SQLite file; restore PostgreSQL with pg_restore (docs/operating.md)")}
			}
			if err := checkBackup(ctx, args[0]); err != nil {
				return &exitError{1, fmt.Errorf("refusing %s: %w", args[0], err)}
			}
			_, err := os.Stat(path)
			exists := err == nil
			if exists && !force {
				return &exitError{1, fmt.Errorf("%s exists: stop the servers using it and give --force to replace it", path)}
			}
			release, err := store.LockForRestore(path)
			if err != nil {
				return &exitError{1, fmt.Errorf("refusing to restore: %w", err)}
			}
			defer release()
			tmp, found, err := stageRestore(ctx, args[0], path)
			if err != nil {
				return &exitError{1, err}
			}
			if len(found) > 0 {
				removeSQLite(tmp)
				for _, v := range found {
					fmt.Fprintln(cmd.OutOrStdout(), "violation:", v)
				}
				return &exitError{1, fmt.Errorf("refusing %s: %d invariants are broken in it; %s was not touched", args[0], len(found), path)}
			}
			aside, err := swapIn(ctx, tmp, path, exists)
			if err != nil {
				return &exitError{1, err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s from %s; verify: every invariant holds\n", path, args[0])
			if aside != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "the database it replaced is kept as %s\n", aside)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing database (kept beside it)")
	return cmd
}

// stageRestore copies the backup to a temporary file beside path and verifies
// every invariant there, before path is touched. It returns the file and the
// violations found (the caller removes the file when there are any).
func stageRestore(ctx context.Context, backup, path string) (tmp string, found []ledger.Violation, err error) {
	src, err := store.Open(ctx, backup)
	if err != nil {
		return "", nil, err
	}
	tmp = filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".restoring")
	_ = os.Remove(tmp)
	err = store.Backup(ctx, src, tmp)
	src.Close()
	if err != nil {
		return "", nil, err
	}
	db, err := store.Open(ctx, tmp)
	if err != nil {
		removeSQLite(tmp)
		return "", nil, err
	}
	found, err = server.Verify(ctx, db)
	if err == nil && len(found) == 0 {
		err = recordRestore(ctx, db, backup, path)
	}
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = checkpoint(ctx, tmp) // the file alone holds it: its -wal and -shm go
	}
	if err != nil {
		removeSQLite(tmp)
		return "", nil, fmt.Errorf("verify before restoring: %w", err)
	}
	return tmp, found, nil
}

// removeSQLite removes a SQLite file with its -wal and -shm files.
func removeSQLite(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// swapIn puts the verified file tmp in place of path. An existing path is first
// made whole (its WAL checkpointed into it) and renamed aside, never deleted; the
// name it got is returned. A crash in between leaves the old database aside and
// the new one at tmp: nothing is lost.
func swapIn(ctx context.Context, tmp, path string, exists bool) (aside string, err error) {
	if exists {
		if err := checkpoint(ctx, path); err != nil {
			return "", fmt.Errorf("%s: could not fold its WAL into it before keeping it aside: %w", path, err)
		}
		aside = path + ".before-restore-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, aside); err != nil {
			return "", err
		}
		// The WAL is empty after the checkpoint; one that is not stays with its file.
		if st, err := os.Stat(path + "-wal"); err == nil && st.Size() > 0 {
			if err := os.Rename(path+"-wal", aside+"-wal"); err != nil {
				return aside, err
			}
		}
	}
	for _, p := range []string{path + "-wal", path + "-shm", tmp + "-wal", tmp + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return aside, err
		}
	}
	return aside, os.Rename(tmp, path)
}

// checkpoint folds the WAL of the SQLite database at path into its main file, so
// that the file alone holds every commit. A file that is no SQLite database has no
// WAL to fold.
func checkpoint(ctx context.Context, path string) error {
	head := make([]byte, 16)
	if f, err := os.Open(path); err != nil {
		return err
	} else {
		n, _ := f.Read(head)
		f.Close()
		if string(head[:n]) != "SQLite format 3\x00" {
			return nil
		}
	}
	db, err := store.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	var busy, logged, folded int
	if err := db.Write.WithContext(ctx).Raw("PRAGMA wal_checkpoint(TRUNCATE)").Row().Scan(&busy, &logged, &folded); err != nil {
		return err
	}
	if busy != 0 {
		return errors.New("another process is using it")
	}
	return nil
}
