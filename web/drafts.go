package web

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/ledger"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// draftOf reads the draft a form edits (its hidden "draft" field), 0 for none.
func draftOf(c *gin.Context) int64 {
	id, err := strconv.ParseInt(c.PostForm("draft"), 10, 64)
	if err != nil || id < 0 {
		return 0
	}
	return id
}

// saveOrPlace saves spec as a draft (the form's "Save as draft" button) or places
// it, deleting the draft the form edits in the same transaction. saved says a
// draft was saved, with its id in id; otherwise id is the placed order's.
func (s *Server) saveOrPlace(c *gin.Context, spec exchange.OrderSpec) (id int64, awaiting, saved bool, err error) {
	u, ctx, draft := userOf(c), c.Request.Context(), draftOf(c)
	if c.PostForm("action") == "draft" {
		d, err := s.svc.Market.SaveDraft(ctx, u, draft, spec)
		return d.ID, false, true, err
	}
	var o exchange.Order
	if draft != 0 {
		o, err = s.svc.Market.PlaceDraft(ctx, u, draft, &spec)
	} else {
		o, err = s.svc.Market.PlaceOrder(ctx, u, spec)
	}
	return o.ID, o.Status == exchange.OrderAwaitingApproval, false, err
}

// savedMessage is the flash after saving a draft.
func savedMessage(id int64) string {
	return fmt.Sprintf("Draft #%d saved. It holds nothing and takes part in no auction until you place it from this page.", id)
}

// draftRows turns drafts into rows of the orders page.
func draftRows(ds []exchange.Draft, canPlace bool, units map[string]string) []templates.DraftRow {
	rows := make([]templates.DraftRow, 0, len(ds))
	for _, d := range ds {
		r := templates.DraftRow{ID: d.ID, Kind: d.Spec.Kind(), Saved: fmtTime(d.UpdatedAt), EditURL: editURL(d), CanPlace: canPlace}
		if d.Spec.Limit != nil {
			m := mon(*d.Spec.Limit)
			r.Limit = &m
		}
		for k, b := range d.Spec.Bundles {
			br := templates.BundleRow{Items: bundleText(b, units)}
			if d.Spec.Limits != nil {
				m := mon(d.Spec.Limits[k])
				br.Limit = &m
			}
			r.Bundles = append(r.Bundles, br)
		}
		rows = append(rows, r)
	}
	return rows
}

// editURL is the form a draft was made with, filled in with the draft.
func editURL(d exchange.Draft) string {
	q := url.Values{"draft": {strconv.FormatInt(d.ID, 10)}}
	spec := d.Spec
	limit := func(m ledger.Money) string { return strings.TrimPrefix(m.Plain(), "-") }
	switch spec.Kind() {
	case "offer":
		for pool, n := range spec.Bundles[0] {
			q.Set("sell."+pool, strconv.FormatInt(-n, 10))
		}
		q.Set("minimum", limit(spec.LimitOf(0)))
		return "/orders/offer?" + q.Encode()
	case "trade":
		for pool, n := range spec.Bundles[0] {
			cl, res, _ := strings.Cut(pool, "/")
			if n < 0 {
				q.Set("from", cl)
				q.Set("q."+res, strconv.FormatInt(-n, 10))
			} else {
				q.Set("to", cl)
				q.Set("buy."+res, strconv.FormatInt(n, 10))
			}
		}
		q.Set("net", "pay")
		if spec.LimitOf(0) < 0 {
			q.Set("net", "receive")
		}
		q.Set("amount", limit(spec.LimitOf(0)))
		return "/orders/move?" + q.Encode()
	}
	q.Set("step", "2")
	q.Set("limit_mode", "one")
	if spec.Limits != nil {
		q.Set("limit_mode", "each")
	} else {
		q.Set("limit", limit(*spec.Limit))
	}
	for k, b := range spec.Bundles {
		for pool, n := range b {
			cl, res, _ := strings.Cut(pool, "/")
			if k == 0 {
				q.Set("q."+res, strconv.FormatInt(n, 10))
			}
			if !q.Has("cluster") || !contains(q["cluster"], cl) {
				q.Add("cluster", cl)
			}
			if spec.Limits != nil {
				q.Set("limit."+cl, limit(spec.Limits[k]))
			}
		}
	}
	sort.Strings(q["cluster"])
	return "/orders/new?" + q.Encode()
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// placeDraft places one draft with the checks and holds of the moment.
func (s *Server) placeDraft(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such draft."))
		return
	}
	o, err := s.svc.Market.PlaceDraft(c.Request.Context(), userOf(c), id, nil)
	if err != nil {
		if code := clearhouse.ErrorCode(err); code == clearhouse.EINTERNAL || code == clearhouse.EFORBIDDEN {
			s.fail(c, err)
			return
		}
		_, msg := fieldOf(s.withAvailable(c.Request.Context(), userOf(c).TeamID, err))
		s.redirectWithFlash(c, "/orders", "error", fmt.Sprintf("Draft #%d was not placed: %s", id, msg))
		return
	}
	s.redirectWithFlash(c, "/orders", "ok", placedDraftMessage(id, o))
}

func placedDraftMessage(id int64, o exchange.Order) string {
	if o.Status == exchange.OrderAwaitingApproval {
		return fmt.Sprintf("Draft #%d placed as order #%d; it waits for a team owner's approval.", id, o.ID)
	}
	return fmt.Sprintf("Draft #%d placed as order #%d.", id, o.ID)
}

// placeAllDrafts places every draft of the team, oldest first, each on its own:
// one refused leaves the others placed, and the flash says which and why.
func (s *Server) placeAllDrafts(c *gin.Context) {
	u, ctx := userOf(c), c.Request.Context()
	ds, err := s.svc.Market.Drafts(ctx, u.TeamID)
	if err != nil {
		s.fail(c, err)
		return
	}
	var placed, refused []string
	for i := len(ds) - 1; i >= 0; i-- {
		o, err := s.svc.Market.PlaceDraft(ctx, u, ds[i].ID, nil)
		switch code := clearhouse.ErrorCode(err); {
		case err == nil:
			placed = append(placed, fmt.Sprintf("#%d as order #%d", ds[i].ID, o.ID))
		case code == clearhouse.EINTERNAL:
			s.fail(c, err)
			return
		default:
			_, msg := fieldOf(s.withAvailable(ctx, u.TeamID, err))
			refused = append(refused, fmt.Sprintf("#%d: %s", ds[i].ID, msg))
		}
	}
	kind, msg := "ok", "Placed drafts "+strings.Join(placed, ", ")+"."
	if len(placed) == 0 {
		kind, msg = "error", "No draft was placed."
	}
	if len(refused) > 0 {
		if kind == "ok" {
			kind = "info"
		}
		msg += " Not placed: " + strings.Join(refused, "; ")
	}
	s.redirectWithFlash(c, "/orders", kind, msg)
}

// deleteDraft deletes one draft.
func (s *Server) deleteDraft(c *gin.Context) {
	id, ok := idParam(c)
	if !ok {
		s.fail(c, clearhouse.Errorf(clearhouse.ENOTFOUND, "No such draft."))
		return
	}
	if err := s.svc.Market.DeleteDraft(c.Request.Context(), userOf(c), id); err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/orders", "ok", fmt.Sprintf("Draft #%d deleted.", id))
}
