package exchange_test

import (
	"context"
	"testing"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestShapesAreValidatedSavedReplacedAndDeleted(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		ctx := context.Background()
		for _, bad := range []exchange.Shape{
			{ID: "Storage!", Name: "storage server", Items: map[string]int64{"cpu": 4}},
			{ID: "storage", Items: map[string]int64{"cpu": 4}},
			{ID: "storage", Name: "storage server"},
			{ID: "storage", Name: "storage server", Items: map[string]int64{"cpu": 0}},
			{ID: "storage", Name: "storage server", Items: map[string]int64{"cpu": 4, "gpu": 1}}, // no pool has gpu
		} {
			if _, err := mk.M.SaveShape(ctx, bad); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
				t.Errorf("%+v: %v, want EINVALID", bad, err)
			}
		}
		if ss, _ := mk.M.Shapes(ctx); len(ss) != 0 {
			t.Fatalf("bad shapes saved: %+v", ss)
		}
		s, err := mk.M.SaveShape(ctx, exchange.Shape{ID: "storage", Name: "storage server", Items: map[string]int64{"cpu": 4, "ram": 16}})
		if err != nil {
			t.Fatal(err)
		}
		if need := s.Need(50); need["cpu"] != 200 || need["ram"] != 800 {
			t.Fatalf("50 shapes need %v", need)
		}
		mk.Clock.Advance(time.Minute)
		if _, err := mk.M.SaveShape(ctx, exchange.Shape{ID: "storage", Name: "storage server", Items: map[string]int64{"cpu": 8}}); err != nil {
			t.Fatal(err)
		}
		got, err := mk.M.Shape(ctx, "storage")
		if err != nil || len(got.Items) != 1 || got.Items["cpu"] != 8 || !got.CreatedAt.Equal(s.CreatedAt) || !got.UpdatedAt.After(s.CreatedAt) {
			t.Fatalf("replaced shape %+v, %v", got, err)
		}
		if err := mk.M.DeleteShape(ctx, "storage"); err != nil {
			t.Fatal(err)
		}
		if _, err := mk.M.Shape(ctx, "storage"); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Fatalf("deleted shape: %v", err)
		}
		if err := mk.M.DeleteShape(ctx, "storage"); clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			t.Fatalf("deleting twice: %v", err)
		}
	})
}
