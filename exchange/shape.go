package exchange

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"gorm.io/gorm"
)

// Shape is a service shape operators define, such as "storage server = 4 cores,
// 16 GiB, 2 TiB": what one unit of a service needs of each resource type. Bid entry
// and search turn "50 storage servers" into a covering bundle per cluster.
type Shape struct {
	ID          string
	Name        string
	Description string
	Items       map[string]int64 // resource type -> units per shape
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

// shapeRow and shapeItem are Shape as stored.
type shapeRow struct {
	ID          string
	Name        string
	Description string
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (shapeRow) TableName() string { return "service_shapes" }

type shapeItem struct {
	ShapeID  string `gorm:"primaryKey"`
	Resource string `gorm:"primaryKey"`
	Quantity int64
}

func (shapeItem) TableName() string { return "service_shape_items" }

// MaxShapeUnits bounds one resource of one shape, so that a count of shapes times
// it stays within MaxQuantity for any count up to MaxShapeCount.
const (
	MaxShapeUnits = 1_000_000
	MaxShapeCount = 1_000_000
)

// Validate checks a shape's fields and names the one at fault: an id of lower-case
// letters, a name, at least one resource with a whole positive quantity.
func (s *Shape) Validate() error {
	s.ID, s.Name, s.Description = strings.TrimSpace(s.ID), strings.TrimSpace(s.Name), strings.TrimSpace(s.Description)
	if err := checkSlug("id", s.ID); err != nil {
		return err
	}
	switch {
	case s.Name == "" || len(s.Name) > 80:
		return clearhouse.Errorf(clearhouse.EINVALID, "name: give the shape a name of at most 80 characters, such as \"storage server\"")
	case len(s.Description) > 500:
		return clearhouse.Errorf(clearhouse.EINVALID, "description: at most 500 characters")
	case len(s.Items) == 0:
		return clearhouse.Errorf(clearhouse.EINVALID, "items: give what one %s needs of at least one resource", s.Name)
	}
	for r, q := range s.Items {
		if err := checkSlug("resource", r); err != nil {
			return err
		}
		if q < 1 || q > MaxShapeUnits {
			return clearhouse.Errorf(clearhouse.EINVALID, "q.%s: one %s needs between 1 and %d units of %s", r, s.Name, MaxShapeUnits, r)
		}
	}
	return nil
}

// Need returns what count shapes need of each resource type.
func (s Shape) Need(count int64) map[string]int64 {
	out := make(map[string]int64, len(s.Items))
	for r, q := range s.Items {
		out[r] = q * count
	}
	return out
}

// Resources lists the shape's resource types, sorted.
func (s Shape) Resources() []string {
	rs := make([]string, 0, len(s.Items))
	for r := range s.Items {
		rs = append(rs, r)
	}
	sort.Strings(rs)
	return rs
}

// SaveShape creates the shape or replaces the one with its id. Returns EINVALID
// for bad fields or a resource type no pool has.
func (m *Market) SaveShape(ctx context.Context, s Shape) (Shape, error) {
	if err := s.Validate(); err != nil {
		return Shape{}, err
	}
	now := m.now()
	err := m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		for _, r := range s.Resources() {
			var n int64
			if err := tx.Table("pools").Where("resource = ?", r).Count(&n).Error; err != nil {
				return err
			}
			if n == 0 {
				return clearhouse.Errorf(clearhouse.EINVALID, "q.%s: no cluster has a %s pool", r, r)
			}
		}
		var old shapeRow
		err := tx.Take(&old, "id = ?", s.ID).Error
		switch {
		case errors.Is(err, gorm.ErrRecordNotFound):
			s.CreatedAt = now
		case err != nil:
			return err
		default:
			s.CreatedAt = old.CreatedAt
		}
		s.UpdatedAt = now
		row := shapeRow{ID: s.ID, Name: s.Name, Description: s.Description, CreatedAt: s.CreatedAt, UpdatedAt: now}
		if err := tx.Save(&row).Error; err != nil {
			return err
		}
		if err := tx.Where("shape_id = ?", s.ID).Delete(&shapeItem{}).Error; err != nil {
			return err
		}
		for _, r := range s.Resources() {
			if err := tx.Create(&shapeItem{ShapeID: s.ID, Resource: r, Quantity: s.Items[r]}).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return s, err
}

// Shapes lists every shape by name.
func (m *Market) Shapes(ctx context.Context) ([]Shape, error) {
	var rows []shapeRow
	if err := m.db.Read.WithContext(ctx).Order("name, id").Find(&rows).Error; err != nil {
		return nil, err
	}
	var items []shapeItem
	if err := m.db.Read.WithContext(ctx).Find(&items).Error; err != nil {
		return nil, err
	}
	byShape := map[string]map[string]int64{}
	for _, it := range items {
		if byShape[it.ShapeID] == nil {
			byShape[it.ShapeID] = map[string]int64{}
		}
		byShape[it.ShapeID][it.Resource] = it.Quantity
	}
	out := make([]Shape, len(rows))
	for i, r := range rows {
		out[i] = Shape{ID: r.ID, Name: r.Name, Description: r.Description, Items: byShape[r.ID], CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	}
	return out, nil
}

// Shape returns one shape, or ENOTFOUND.
func (m *Market) Shape(ctx context.Context, id string) (Shape, error) {
	var r shapeRow
	if err := m.db.Read.WithContext(ctx).Take(&r, "id = ?", id).Error; err != nil {
		return Shape{}, notFound(err, "shape: no service shape %q", id)
	}
	var items []shapeItem
	if err := m.db.Read.WithContext(ctx).Where("shape_id = ?", id).Find(&items).Error; err != nil {
		return Shape{}, err
	}
	s := Shape{ID: r.ID, Name: r.Name, Description: r.Description, Items: map[string]int64{}, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	for _, it := range items {
		s.Items[it.Resource] = it.Quantity
	}
	return s, nil
}

// DeleteShape removes a shape. Orders placed with it keep their bundles: a shape
// only helps enter them. Returns ENOTFOUND for an unknown shape.
func (m *Market) DeleteShape(ctx context.Context, id string) error {
	return m.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("shape_id = ?", id).Delete(&shapeItem{}).Error; err != nil {
			return err
		}
		res := tx.Where("id = ?", id).Delete(&shapeRow{})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "shape: no service shape %q", id)
		}
		return nil
	})
}
