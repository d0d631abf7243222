package exchange_test

import (
	"context"
	"regexp"
	"strconv"
	"testing"

	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/exchange/exchangetest"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

var (
	noticeTotal = regexp.MustCompile(`; paid (\$[\d,]+\.\d+)`)
	noticeLine  = regexp.MustCompile(`Order #(\d+) won .*? and paid (\$[\d,]+\.\d+)(?:\.| \(|:)`)
)

// A settlement notification's "paid" total is the sum of the amounts its lines
// show, and each line shows its settled payment exactly (issue 31: a notice said
// "paid $2,376.75" over lines that added up to $2,376.74).
func TestSettlementNoticeTotalIsTheSumOfItsLines(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		mk := exchangetest.NewAuctionMarket(t, db)
		ctx := context.Background()
		for _, b := range []exchange.Bundle{{"us-east/cpu": 12, "us-east/ram": 31}, {"us-east/cpu": 11}, {"us-east/cpu": 10, "us-east/ram": 77}, {"us-east/cpu": 9}} {
			if _, err := mk.Order("owner@search", exchange.OrderSpec{Team: "search", Limit: exchangetest.Money(240), Bundles: []exchange.Bundle{b}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := mk.M.Close(ctx, mk.AuctionID); err != nil {
			t.Fatal(err)
		}
		rep, err := mk.M.SettlementReport(ctx, mk.AuctionID)
		if err != nil {
			t.Fatal(err)
		}
		settled := map[int64]int64{}
		for _, l := range rep.Lines {
			settled[l.OrderID] = l.Payment
		}
		ns := notices(t, mk, "owner@search")
		if len(ns) == 0 {
			t.Fatal("no notice")
		}
		body := ns[0].Body
		total := noticeTotal.FindStringSubmatch(body)
		lines := noticeLine.FindAllStringSubmatch(body, -1)
		if total == nil || len(lines) < 2 {
			t.Fatalf("want a total and two winning lines or more:\n%s", body)
		}
		sum := int64(0)
		for _, l := range lines {
			m, err := moneyfmt.Parse(l[2])
			if err != nil {
				t.Fatal(err)
			}
			id, _ := strconv.ParseInt(l[1], 10, 64)
			if m != settled[id] {
				t.Errorf("order %s: the notice says %s, it paid %s", l[1], l[2], moneyfmt.Exact(settled[id]))
			}
			sum += m
		}
		if got, err := moneyfmt.Parse(total[1]); err != nil || got != sum {
			t.Errorf("the notice's total says %s, its lines add to %s:\n%s", total[1], moneyfmt.Exact(sum), body)
		}
	})
}
