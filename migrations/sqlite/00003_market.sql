-- The market: clusters, pools and their reserve curves, quota holdings, orders,
-- auctions with their runs, and settlement lines.
-- +goose Up
CREATE TABLE reserve_curves (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    spec       TEXT NOT NULL,
    updated_at DATETIME NOT NULL
);

CREATE TABLE clusters (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    region     TEXT NOT NULL DEFAULT '',
    created_at DATETIME NOT NULL
);

CREATE TABLE pools (
    id          TEXT PRIMARY KEY,
    cluster_id  TEXT NOT NULL REFERENCES clusters (id),
    resource    TEXT NOT NULL,
    unit        TEXT NOT NULL,
    capacity    INTEGER NOT NULL CHECK (capacity >= 0),
    unit_cost   INTEGER NOT NULL CHECK (unit_cost >= 0),
    utilization REAL NOT NULL CHECK (utilization >= 0 AND utilization <= 1),
    curve_id    TEXT NOT NULL REFERENCES reserve_curves (id),
    created_at  DATETIME NOT NULL,
    updated_at  DATETIME NOT NULL,
    UNIQUE (cluster_id, resource)
);

CREATE TABLE holdings (
    team_id  TEXT NOT NULL REFERENCES teams (id),
    pool_id  TEXT NOT NULL REFERENCES pools (id),
    quantity INTEGER NOT NULL CHECK (quantity >= 0),
    PRIMARY KEY (team_id, pool_id)
);

CREATE TABLE auctions (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    status      TEXT NOT NULL CHECK (status IN ('scheduled', 'open', 'closing', 'settled', 'failed')),
    opens_at    DATETIME NOT NULL,
    closes_at   DATETIME NOT NULL,
    params      TEXT NOT NULL DEFAULT '{}',
    failure     TEXT NOT NULL DEFAULT '',
    created_at  DATETIME NOT NULL,
    settled_at  DATETIME,
    CHECK (closes_at > opens_at)
);
CREATE INDEX auctions_status ON auctions (status, closes_at);

CREATE TABLE auction_pools (
    auction_id    INTEGER NOT NULL REFERENCES auctions (id),
    pool_id       TEXT NOT NULL REFERENCES pools (id),
    reserve_price REAL NOT NULL CHECK (reserve_price >= 0),
    supply        INTEGER NOT NULL CHECK (supply >= 0),
    utilization   REAL NOT NULL,
    PRIMARY KEY (auction_id, pool_id)
);

CREATE TABLE auction_runs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    auction_id INTEGER NOT NULL REFERENCES auctions (id),
    binding    BOOLEAN NOT NULL DEFAULT FALSE,
    converged  BOOLEAN NOT NULL,
    rounds     INTEGER NOT NULL,
    seconds    REAL NOT NULL,
    orders     INTEGER NOT NULL,
    trajectory TEXT NOT NULL DEFAULT '[]',
    ran_at     DATETIME NOT NULL
);
CREATE INDEX auction_runs_auction ON auction_runs (auction_id, id);
CREATE UNIQUE INDEX auction_runs_one_binding ON auction_runs (auction_id) WHERE binding;

CREATE TABLE run_prices (
    run_id        INTEGER NOT NULL REFERENCES auction_runs (id),
    pool_id       TEXT NOT NULL REFERENCES pools (id),
    price         REAL NOT NULL,
    excess_demand REAL NOT NULL,
    operator_sold REAL NOT NULL,
    PRIMARY KEY (run_id, pool_id)
);

CREATE TABLE orders (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    team_id      TEXT NOT NULL REFERENCES teams (id),
    auction_id   INTEGER REFERENCES auctions (id),
    created_by   INTEGER NOT NULL REFERENCES users (id),
    status       TEXT NOT NULL CHECK (status IN ('draft', 'awaiting_approval', 'open', 'won', 'lost', 'withdrawn', 'rejected')),
    shared_limit INTEGER,
    hold_id      INTEGER,
    note         TEXT NOT NULL DEFAULT '',
    idem_key     TEXT UNIQUE,
    idem_digest  TEXT NOT NULL DEFAULT '',
    decided_by   INTEGER REFERENCES users (id),
    created_at   DATETIME NOT NULL,
    updated_at   DATETIME NOT NULL
);
CREATE INDEX orders_team ON orders (team_id, status);
CREATE INDEX orders_auction ON orders (auction_id, status);

CREATE TABLE order_bundles (
    order_id    INTEGER NOT NULL REFERENCES orders (id),
    idx         INTEGER NOT NULL CHECK (idx >= 0),
    bundle_limit INTEGER,
    PRIMARY KEY (order_id, idx)
);

CREATE TABLE order_items (
    order_id   INTEGER NOT NULL REFERENCES orders (id),
    bundle_idx INTEGER NOT NULL,
    pool_id    TEXT NOT NULL REFERENCES pools (id),
    quantity   INTEGER NOT NULL CHECK (quantity <> 0),
    PRIMARY KEY (order_id, bundle_idx, pool_id)
);

CREATE TABLE quota_holds (
    order_id INTEGER NOT NULL REFERENCES orders (id),
    team_id  TEXT NOT NULL REFERENCES teams (id),
    pool_id  TEXT NOT NULL REFERENCES pools (id),
    quantity INTEGER NOT NULL CHECK (quantity > 0),
    PRIMARY KEY (order_id, pool_id)
);

CREATE TABLE run_outcomes (
    run_id       INTEGER NOT NULL REFERENCES auction_runs (id),
    order_id     INTEGER NOT NULL REFERENCES orders (id),
    bundle_index INTEGER NOT NULL,
    payment      REAL NOT NULL,
    PRIMARY KEY (run_id, order_id)
);
CREATE INDEX run_outcomes_order ON run_outcomes (order_id, run_id);

CREATE TABLE settlement_lines (
    auction_id   INTEGER NOT NULL REFERENCES auctions (id),
    order_id     INTEGER NOT NULL REFERENCES orders (id),
    team_id      TEXT NOT NULL REFERENCES teams (id),
    bundle_index INTEGER NOT NULL,
    payment      INTEGER NOT NULL,
    entry_id     INTEGER,
    PRIMARY KEY (auction_id, order_id)
);
CREATE INDEX settlement_lines_order ON settlement_lines (order_id);

-- +goose Down
DROP TABLE settlement_lines;
DROP TABLE run_outcomes;
DROP TABLE quota_holds;
DROP TABLE order_items;
DROP TABLE order_bundles;
DROP TABLE orders;
DROP TABLE run_prices;
DROP TABLE auction_runs;
DROP TABLE auction_pools;
DROP TABLE auctions;
DROP TABLE holdings;
DROP TABLE pools;
DROP TABLE clusters;
DROP TABLE reserve_curves;
