-- A pool's last capacity as its cluster's agent measured it (issue 21), e.g. the sum of
-- the Kubernetes nodes' allocatable. Shown to operators beside the configured capacity
-- (pools.capacity); reserve prices and the market's supply keep using the configured one.
-- +goose Up
CREATE TABLE pool_measured_capacity (
    pool_id     TEXT PRIMARY KEY REFERENCES pools (id),
    capacity    INTEGER NOT NULL CHECK (capacity >= 0),
    measured_at DATETIME NOT NULL
);

-- +goose Down
DROP TABLE pool_measured_capacity;
