package costs

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/moneyfmt"
)

// FOCUSVersion is the version of the FinOps Open Cost and Usage Specification
// whose columns WriteFOCUS writes.
const FOCUSVersion = "1.0"

// FOCUSColumns are the columns of the FOCUS export, in order: every column FOCUS
// 1.0 requires, the conditional ones Clearhouse has figures for, and two of its own
// (x_ prefixed, as the specification asks of custom columns). docs/formats/focus.md
// says what each holds.
var FOCUSColumns = []string{
	"BilledCost", "BillingAccountId", "BillingAccountName", "BillingCurrency", "BillingPeriodEnd", "BillingPeriodStart",
	"ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "ChargePeriodEnd", "ChargePeriodStart",
	"ConsumedQuantity", "ConsumedUnit", "ContractedCost", "EffectiveCost", "InvoiceIssuerName", "ListCost",
	"PricingQuantity", "PricingUnit", "ProviderName", "PublisherName", "RegionId", "RegionName",
	"ResourceId", "ResourceName", "ResourceType", "ServiceCategory", "ServiceName", "SubAccountId", "SubAccountName",
	"x_ClearhouseEntryId", "x_ClearhouseKind",
}

// FOCUSAccount is who the export is billed to and by: the organization's own
// market, one billing account whose sub-accounts are its teams.
type FOCUSAccount struct {
	ID, Name string            // BillingAccountId and BillingAccountName; default "clearhouse", "Clearhouse market"
	Teams    map[string]string // team id to name, for SubAccountName
	Clusters map[string]string // cluster id to name, for RegionName
}

// focusService is what each kind of charge is in FOCUS terms.
var focusService = map[string]struct{ name, category, frequency string }{
	ledger.SpendBought:      {"Quota auction", "Purchase", "One-Time"},
	ledger.SpendSold:        {"Quota auction", "Credit", "One-Time"},
	ledger.SpendHolding:     {"Holding charge", "Purchase", "Recurring"},
	ledger.SpendReservation: {"Reservations", "Usage", "Usage-Based"},
	ledger.SpendBestEffort:  {"Best-effort jobs", "Usage", "Usage-Based"},
}

// BilledCost is what a line adds to the team's bill: its cost, or for a sale of
// quota the receipt as a negative cost (a credit).
func (l Line) BilledCost() ledger.Money {
	if l.Kind == ledger.SpendSold {
		return -l.Amount
	}
	return l.Amount
}

// WriteFOCUS writes lines as a FOCUS 1.0 CSV: a header of FOCUSColumns and one
// row per line. Costs are decimals with six places (exact micro-dollars), times
// are UTC in RFC 3339 to the second, an empty cell is null. BilledCost,
// EffectiveCost, ListCost and ContractedCost are all the amount the ledger moved:
// an internal market has no list price or negotiated discount apart from it.
func WriteFOCUS(w io.Writer, lines []Line, acct FOCUSAccount) error {
	if acct.ID == "" {
		acct.ID, acct.Name = "clearhouse", "Clearhouse market"
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(FOCUSColumns); err != nil {
		return err
	}
	for _, l := range lines {
		svc := focusService[l.Kind]
		cost := moneyfmt.CSV(int64(l.BilledCost()))
		bpStart := time.Date(l.PostedAt.Year(), l.PostedAt.Month(), 1, 0, 0, 0, 0, time.UTC)
		class := ""
		if l.Reversal {
			class = "Correction"
		}
		var qty, unit, consumed, consumedUnit string
		if l.PoolID != "" && l.Quantity > 0 {
			qty, unit = strconv.FormatInt(l.Quantity, 10), l.Unit
			if svc.category == "Usage" {
				consumed, consumedUnit = qty, unit
			}
		}
		region, regionName, resType, category := "", "", "", "Other"
		if l.PoolID != "" {
			region, regionName, resType, category = l.ClusterID, acct.Clusters[l.ClusterID], "Pool", serviceCategory(l.PoolID)
		}
		row := []string{
			cost, clearhouse.CSVText(acct.ID), clearhouse.CSVText(acct.Name), "USD", clearhouse.CSVTime(bpStart.AddDate(0, 1, 0)), clearhouse.CSVTime(bpStart),
			svc.category, class, clearhouse.CSVText(l.Memo), svc.frequency, clearhouse.CSVTime(l.PeriodEnd), clearhouse.CSVTime(l.PeriodStart),
			consumed, clearhouse.CSVText(consumedUnit), cost, cost, "Clearhouse", cost,
			qty, clearhouse.CSVText(unit), "Clearhouse", "Clearhouse", clearhouse.CSVText(region), clearhouse.CSVText(regionName),
			clearhouse.CSVText(l.PoolID), clearhouse.CSVText(l.PoolID), resType, category, svc.name, clearhouse.CSVText(l.Team), clearhouse.CSVText(acct.Teams[l.Team]),
			strconv.FormatInt(l.EntryID, 10), l.Kind,
		}
		if err := cw.Write(row); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// serviceCategory is FOCUS's ServiceCategory of a pool's resource: disks are
// Storage, accelerators AI and Machine Learning, the rest Compute.
func serviceCategory(pool string) string {
	_, res, _ := strings.Cut(pool, "/")
	switch res {
	case "disk", "storage":
		return "Storage"
	case "gpu":
		return "AI and Machine Learning"
	}
	return "Compute"
}
