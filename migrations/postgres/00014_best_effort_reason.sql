-- Best-effort charges get their own ledger reason (issue 14): an abacus job's budget,
-- captured when the job is done, was posted with reason 'reservation' because the
-- reasons are a CHECK of ledger_entries. Entries posted before keep their reason (the
-- journal is append-only); pages recognise them by their reference, best-effort:N.
-- +goose Up
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_reason_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_reason_check
    CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment', 'best-effort'));

-- +goose Down
-- Fails (and changes nothing) while a best-effort entry exists: the old CHECK refuses it.
ALTER TABLE ledger_entries DROP CONSTRAINT ledger_entries_reason_check;
ALTER TABLE ledger_entries ADD CONSTRAINT ledger_entries_reason_check
    CHECK (reason IN ('grant', 'settlement', 'reservation', 'reversal', 'adjustment'));
