-- Reference fixed prices (issue 15, the paper's Fig. 6): what a pool's unit would
-- cost at the fixed price the operator compares auction prices with. Settlement
-- prices are shown as a ratio over it.
-- +goose Up
CREATE TABLE reference_prices (
    pool_id    TEXT PRIMARY KEY REFERENCES pools (id),
    price      BIGINT NOT NULL CHECK (price > 0),
    updated_at TIMESTAMPTZ NOT NULL
);

-- +goose Down
DROP TABLE reference_prices;
