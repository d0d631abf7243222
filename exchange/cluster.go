package exchange

import (
	"context"
	"errors"
	"math"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"
)

// Cluster is a set of machines in one place; its pools are the resource types it
// offers.
type Cluster struct {
	ID        string
	Name      string
	Region    string
	CreatedAt time.Time
}

// Pool is one resource type in one cluster, e.g. "us-east/cpu". UnitCost is the real
// cost of one unit for one auction period; Utilization is in [0,1]. ReservePrice
// (curve.go) prices a unit from them.
type Pool struct {
	ID          string
	ClusterID   string
	Resource    string
	Unit        string
	Capacity    int64
	UnitCost    ledger.Money
	Utilization float64
	CurveID     string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// AddCluster creates a cluster. Returns EINVALID for bad fields and ECONFLICT for a
// taken id.
func (m *Market) AddCluster(ctx context.Context, c Cluster) (Cluster, error) {
	c.ID, c.Name, c.Region = strings.TrimSpace(c.ID), strings.TrimSpace(c.Name), strings.TrimSpace(c.Region)
	if err := checkSlug("id", c.ID); err != nil {
		return Cluster{}, err
	}
	if c.Name == "" {
		c.Name = c.ID
	}
	c.CreatedAt = m.now()
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&c).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "cluster.add", "cluster:"+c.ID, nil, map[string]string{"name": c.Name, "region": c.Region})
	})
	if errors.Is(err, gorm.ErrDuplicatedKey) {
		return Cluster{}, clearhouse.Errorf(clearhouse.ECONFLICT, "id: cluster %q already exists", c.ID)
	}
	return c, err
}

// Clusters lists every cluster by id.
func (m *Market) Clusters(ctx context.Context) ([]Cluster, error) {
	var cs []Cluster
	return cs, m.db.Read.WithContext(ctx).Order("id").Find(&cs).Error
}

// PoolSpec is what AddPool and UpdatePool take.
type PoolSpec struct {
	ClusterID, Resource, Unit string
	Capacity                  int64
	UnitCost                  ledger.Money // per unit per period
	Utilization               float64
	CurveID                   string
}

// Validate checks the fields and names the one at fault.
func (p *PoolSpec) Validate() error {
	p.ClusterID, p.Resource, p.Unit = strings.TrimSpace(p.ClusterID), strings.TrimSpace(p.Resource), strings.TrimSpace(p.Unit)
	if err := checkSlug("cluster", p.ClusterID); err != nil {
		return err
	}
	if err := checkSlug("resource", p.Resource); err != nil {
		return err
	}
	switch {
	case p.Unit == "" || len(p.Unit) > 20:
		return clearhouse.Errorf(clearhouse.EINVALID, "unit: give the unit of one quantity (e.g. core, GiB), at most 20 characters")
	case p.Capacity < 0 || p.Capacity > 1e12:
		return clearhouse.Errorf(clearhouse.EINVALID, "capacity: must be between 0 and 10^12 units")
	case p.UnitCost < 0:
		return clearhouse.Errorf(clearhouse.EINVALID, "unit cost: must not be negative")
	case math.IsNaN(p.Utilization) || p.Utilization < 0 || p.Utilization > 1:
		return clearhouse.Errorf(clearhouse.EINVALID, "utilization: must be between 0 and 1 (0%% to 100%%)")
	case p.CurveID == "":
		return clearhouse.Errorf(clearhouse.EINVALID, "curve: choose a reserve curve")
	}
	return nil
}

// AddPool creates a pool "cluster/resource". Returns EINVALID for bad fields,
// ENOTFOUND for an unknown cluster or curve and ECONFLICT for a pool that exists.
func (m *Market) AddPool(ctx context.Context, ps PoolSpec) (Pool, error) {
	if err := ps.Validate(); err != nil {
		return Pool{}, err
	}
	now := m.now()
	p := Pool{ID: ps.ClusterID + "/" + ps.Resource, ClusterID: ps.ClusterID, Resource: ps.Resource, Unit: ps.Unit,
		Capacity: ps.Capacity, UnitCost: ps.UnitCost, Utilization: ps.Utilization, CurveID: ps.CurveID,
		CreatedAt: now, UpdatedAt: now}
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := exists(tx, "clusters", ps.ClusterID, "cluster: no cluster %q", ps.ClusterID); err != nil {
			return err
		}
		if err := exists(tx, "reserve_curves", ps.CurveID, "curve: no reserve curve %q", ps.CurveID); err != nil {
			return err
		}
		if err := bumpPlan(tx); err != nil {
			return err
		}
		if err := tx.Create(&p).Error; errors.Is(err, gorm.ErrDuplicatedKey) {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "resource: pool %q already exists", p.ID)
		} else if err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.add", "pool:"+p.ID, nil, stateOf(p))
	})
	return p, err
}

// UpdatePool changes a pool's unit, capacity, cost, utilization and curve. Capacity
// may not be lowered below the quota teams hold in the pool and an open auction
// sells (ECONFLICT); holdings above an unchanged capacity (sold from a larger
// measured one) do not stop other changes.
func (m *Market) UpdatePool(ctx context.Context, id string, ps PoolSpec) (Pool, error) {
	var p Pool
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var err error
		if p, err = lockPool(tx, id); err != nil {
			return err
		}
		ps.ClusterID, ps.Resource = p.ClusterID, p.Resource
		if err := ps.Validate(); err != nil {
			return err
		}
		if err := exists(tx, "reserve_curves", ps.CurveID, "curve: no reserve curve %q", ps.CurveID); err != nil {
			return err
		}
		held, selling, err := committedCapacity(tx, id)
		if err != nil {
			return err
		}
		if ps.Capacity < p.Capacity && ps.Capacity < held+selling { // a measured capacity above it may have sold more
			return clearhouse.Errorf(clearhouse.ECONFLICT, "capacity: teams hold %d %s in %s and an open auction sells %d; capacity cannot be less than %d",
				held, p.Unit, id, selling, held+selling)
		}
		before := stateOf(p)
		p.Unit, p.Capacity, p.UnitCost, p.Utilization, p.CurveID, p.UpdatedAt = ps.Unit, ps.Capacity, ps.UnitCost, ps.Utilization, ps.CurveID, m.now()
		if err := bumpPlan(tx); err != nil { // capacity feeds the reservation plan
			return err
		}
		if err := tx.Save(&p).Error; err != nil {
			return err
		}
		return m.record(ctx, tx, "pool.update", "pool:"+p.ID, before, stateOf(p))
	})
	return p, err
}

// Pool returns one pool or ENOTFOUND.
func (m *Market) Pool(ctx context.Context, id string) (Pool, error) {
	var p Pool
	err := m.db.Read.WithContext(ctx).Take(&p, "id = ?", id).Error
	return p, notFound(err, "pool: no pool %q", id)
}

// Pools lists every pool by id.
func (m *Market) Pools(ctx context.Context) ([]Pool, error) {
	var ps []Pool
	return ps, m.db.Read.WithContext(ctx).Order("id").Find(&ps).Error
}

// exists is store.Exists.
var exists = store.Exists

// Holding is the quota a team holds in a pool.
type Holding struct {
	TeamID   string
	PoolID   string
	Quantity int64
}

// Holdings lists a team's holdings by pool; an empty team lists every team's.
func (m *Market) Holdings(ctx context.Context, team string) ([]Holding, error) {
	q := m.db.Read.WithContext(ctx).Where("quantity > 0").Order("team_id, pool_id")
	if team != "" {
		q = q.Where("team_id = ?", team)
	}
	var hs []Holding
	return hs, q.Find(&hs).Error
}

// GrantQuota gives a team quantity units of a pool out of the pool's unheld
// effective capacity (PoolCapacities; an operator's initial allocation), less
// what an open auction offers for sale in it. Returns ECONFLICT when the pool has too little left.
func (m *Market) GrantQuota(ctx context.Context, team, pool string, quantity int64) error {
	if quantity <= 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "quantity: must be a positive whole number")
	}
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := exists(tx, "teams", team, "team: no team %q", team); err != nil {
			return err
		}
		p, err := lockPool(tx, pool)
		if err != nil {
			return err
		}
		held, selling, err := committedCapacity(tx, pool)
		if err != nil {
			return err
		}
		caps, err := capacitiesIn(tx, m.now())
		if err != nil {
			return err
		}
		if left := caps[pool].Effective - held - selling; quantity > left {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "quantity: %s has %d %s of its %s capacity (%d) that no team holds and no open auction sells; cannot grant %d",
				pool, max(left, 0), p.Unit, caps[pool].Source, caps[pool].Effective, quantity)
		}
		if err := lockHoldings(tx, team, []string{pool}); err != nil {
			return err
		}
		var had int64
		if err := tx.Model(&Holding{}).Where("team_id = ? AND pool_id = ?", team, pool).Select("COALESCE(SUM(quantity), 0)").Scan(&had).Error; err != nil {
			return err
		}
		if err := addHolding(tx, team, pool, quantity); err != nil {
			return err
		}
		if err := bumpPlan(tx); err != nil { // quotas feed the reservation plan
			return err
		}
		return m.record(ctx, tx, "quota.grant", "team:"+team+" pool:"+pool, map[string]int64{"held": had},
			map[string]int64{"held": had + quantity, "granted": quantity})
	})
}

// lockPool reads a pool and locks its row until tx ends (ENOTFOUND for none).
func lockPool(tx *gorm.DB, id string) (Pool, error) {
	var p Pool
	err := tx.Clauses(clause.Locking{Strength: "UPDATE"}).Take(&p, "id = ?", id).Error
	return p, notFound(err, "pool: no pool %q", id)
}

// committedCapacity is what of a pool's capacity is spoken for: the quota teams
// hold, and the operator supply an open (or closing) auction offers for sale.
func committedCapacity(tx *gorm.DB, pool string) (held, selling int64, err error) {
	if err := tx.Table("holdings").Where("pool_id = ?", pool).Select("COALESCE(SUM(quantity), 0)").Scan(&held).Error; err != nil {
		return 0, 0, err
	}
	err = tx.Raw(`SELECT COALESCE(SUM(ap.supply), 0) FROM auction_pools ap JOIN auctions a ON a.id = ap.auction_id
		WHERE ap.pool_id = ? AND a.status IN ?`, pool, []AuctionStatus{AuctionOpen, AuctionClosing}).Scan(&selling).Error
	return held, selling, err
}

// addHolding adds delta (possibly negative) to a team's holding in a pool; the
// schema refuses a negative result. The caller holds the holding's row (when it
// exists) and moves the plan's version.
func addHolding(tx *gorm.DB, team, pool string, delta int64) error {
	res := tx.Exec("UPDATE holdings SET quantity = quantity + ? WHERE team_id = ? AND pool_id = ?", delta, team, pool)
	if res.Error != nil {
		return res.Error
	}
	if res.RowsAffected == 0 {
		return tx.Exec(`INSERT INTO holdings (team_id, pool_id, quantity) VALUES (?, ?, ?)
			ON CONFLICT (team_id, pool_id) DO UPDATE SET quantity = holdings.quantity + excluded.quantity`, team, pool, delta).Error
	}
	return nil
}
