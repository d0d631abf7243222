package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/clearhouse/clearhouse"
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
and nothing changes, unless it is a sound Clearhouse database whose schema is not newer
than this binary's. The file is written beside --db and renamed over it, so a failure
leaves the database as it was; its -wal and -shm files are removed. Stop every server
using --db first. An existing --db is replaced only with --force. Afterwards every
invariant 'clearhouse verify' checks is checked, and restore exits 1 if any is broken.
A backup from an older release is migrated when the server next starts.`,
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
			if _, err := os.Stat(path); err == nil && !force {
				return &exitError{1, fmt.Errorf("%s exists: stop the servers using it and give --force to replace it", path)}
			}
			if err := restoreSQLite(ctx, args[0], path); err != nil {
				return &exitError{1, err}
			}
			db, err := store.Open(ctx, path)
			if err != nil {
				return &exitError{1, err}
			}
			defer db.Close()
			found, err := verifyAll(ctx, db)
			if err != nil {
				return &exitError{1, fmt.Errorf("verify after restore: %w", err)}
			}
			for _, v := range found {
				fmt.Fprintln(cmd.OutOrStdout(), "violation:", v)
			}
			if len(found) > 0 {
				return &exitError{1, fmt.Errorf("restored %s, but %d invariants are broken", path, len(found))}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "restored %s from %s; verify: every invariant holds\n", path, args[0])
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "replace an existing database")
	return cmd
}

// restoreSQLite copies the backup to a temporary file beside path, then renames it
// over path and removes path's WAL files.
func restoreSQLite(ctx context.Context, backup, path string) error {
	src, err := store.Open(ctx, backup)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".restoring")
	_ = os.Remove(tmp)
	err = store.Backup(ctx, src, tmp)
	src.Close()
	if err != nil {
		return err
	}
	for _, suffix := range []string{"-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return os.Rename(tmp, path)
}
