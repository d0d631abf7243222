package web

import (
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// resourceUnits returns each resource type the market's pools have, with its unit,
// sorted by name.
func (s *Server) resourceUnits(c *gin.Context) ([]templates.ResourceInput, error) {
	pools, err := s.svc.Market.Pools(c.Request.Context())
	if err != nil {
		return nil, err
	}
	units := map[string]string{}
	for _, p := range pools {
		if _, ok := units[p.Resource]; !ok {
			units[p.Resource] = p.Unit
		}
	}
	out := make([]templates.ResourceInput, 0, len(units))
	for r, u := range units {
		out = append(out, templates.ResourceInput{Name: r, Unit: u})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// shapeNeeds says what one shape needs: "4 core cpu, 16 GiB ram".
func shapeNeeds(sh exchange.Shape, units map[string]string, count int64) string {
	parts := make([]string, 0, len(sh.Items))
	for _, r := range sh.Resources() {
		parts = append(parts, amountOf(sh.Items[r]*count, units[r], r))
	}
	return strings.Join(parts, ", ")
}

// amountOf says a quantity of a resource: "16 GiB ram", or "8 GPU" when the unit
// names the resource.
func amountOf(q int64, unit, resource string) string {
	switch {
	case unit == "":
		return moneyfmt.Count(q) + " " + resource
	case strings.EqualFold(unit, resource):
		return moneyfmt.Count(q) + " " + unit
	}
	return moneyfmt.Count(q) + " " + unit + " " + resource
}

func unitsOf(rs []templates.ResourceInput) map[string]string {
	m := map[string]string{}
	for _, r := range rs {
		m[r.Name] = r.Unit
	}
	return m
}

func (s *Server) shapesView(c *gin.Context, form templates.ShapeForm) (templates.ShapesView, error) {
	rs, err := s.resourceUnits(c)
	if err != nil {
		return templates.ShapesView{}, err
	}
	shapes, err := s.svc.Market.Shapes(c.Request.Context())
	if err != nil {
		return templates.ShapesView{}, err
	}
	v := templates.ShapesView{Form: form}
	for _, sh := range shapes {
		v.Shapes = append(v.Shapes, templates.ShapeRow{ID: sh.ID, Name: sh.Name, Description: sh.Description,
			Needs: shapeNeeds(sh, unitsOf(rs), 1), Updated: fmtTime(sh.UpdatedAt)})
	}
	typed := map[string]string{}
	for _, r := range form.Resources {
		typed[r.Name] = r.Value
	}
	v.Form.Resources = nil
	for _, r := range rs {
		r.Value = typed[r.Name]
		v.Form.Resources = append(v.Form.Resources, r)
	}
	return v, nil
}

func (s *Server) shapesPage(c *gin.Context) {
	v, err := s.shapesView(c, templates.ShapeForm{Errors: templates.FieldErrors{}})
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusOK, templates.ShapesPage(s.page(c, "Service shapes", "shapes"), v))
}

// saveShape adds or replaces a shape from the operators' form.
func (s *Server) saveShape(c *gin.Context) {
	rs, err := s.resourceUnits(c)
	if err != nil {
		s.fail(c, err)
		return
	}
	form := templates.ShapeForm{ID: c.PostForm("id"), Name: c.PostForm("name"), Description: c.PostForm("description"), Errors: templates.FieldErrors{}}
	sh := exchange.Shape{ID: form.ID, Name: form.Name, Description: form.Description, Items: map[string]int64{}}
	for _, r := range rs {
		raw := strings.TrimSpace(c.PostForm("q." + r.Name))
		form.Resources = append(form.Resources, templates.ResourceInput{Name: r.Name, Unit: r.Unit, Value: raw})
		if raw == "" || raw == "0" {
			continue
		}
		q, err := parseWhole(raw, 0, exchange.MaxShapeUnits)
		if err != nil {
			form.Errors["q."+r.Name] = fmt.Sprintf("%s per unit: %s.", r.Name, err)
			continue
		}
		sh.Items[r.Name] = q
	}
	if len(form.Errors) == 0 {
		if _, err := s.svc.Market.SaveShape(c.Request.Context(), sh); err == nil {
			s.redirectWithFlash(c, "/operate/shapes", "ok", fmt.Sprintf("Shape %q saved.", strings.TrimSpace(sh.Name)))
			return
		} else if clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			s.fail(c, err)
			return
		} else {
			form.Errors = formErrors(err, "items")
		}
	}
	v, err := s.shapesView(c, form)
	if err != nil {
		s.fail(c, err)
		return
	}
	s.render(c, http.StatusUnprocessableEntity, templates.ShapesPage(s.page(c, "Service shapes", "shapes"), v))
}

func (s *Server) deleteShape(c *gin.Context) {
	id := c.Param("id")
	if !s.confirmed(c, "operate", templates.Confirm{
		Question: fmt.Sprintf("Remove shape %s?", id),
		Lines: []string{"Teams can no longer bid in units of it; orders already placed with it keep their bundles.",
			"It cannot be restored: you would add it again by hand."},
		Button: fmt.Sprintf("Remove shape %s", id), Back: "/operate/shapes", Keep: "Keep the shape",
	}) {
		return
	}
	if err := s.svc.Market.DeleteShape(c.Request.Context(), id); err != nil {
		s.fail(c, err)
		return
	}
	s.redirectWithFlash(c, "/operate/shapes", "ok", fmt.Sprintf("Shape %s removed; orders placed with it keep their bundles.", id))
}

// readShapeNeed reads "count units of shape" from a bid form into f and returns
// what they need of each resource (empty when no shape is chosen).
func readShapeNeed(bc bidContext, get func(string) string, f *templates.BidForm) map[string]int64 {
	need := map[string]int64{}
	f.Shape, f.Count = strings.TrimSpace(get("shape")), strings.TrimSpace(get("count"))
	units := map[string]string{}
	for _, r := range bc.resources {
		units[r.Name] = r.Unit
	}
	var chosen *exchange.Shape
	for i, sh := range bc.shapes {
		f.Shapes = append(f.Shapes, templates.ShapeOption{ID: sh.ID, Name: sh.Name, Needs: shapeNeeds(sh, units, 1)})
		if sh.ID == f.Shape {
			chosen = &bc.shapes[i]
		}
	}
	switch {
	case f.Shape == "" && (f.Count == "" || f.Count == "0"):
		return need
	case f.Shape == "":
		f.Errors["shape"] = "Choose the service shape you need " + f.Count + " of."
		return need
	case chosen == nil:
		f.Errors["shape"] = fmt.Sprintf("There is no service shape %q; choose one of the list.", f.Shape)
		return need
	}
	n, err := parseWhole(f.Count, 1, exchange.MaxShapeCount)
	if err != nil {
		f.Errors["count"] = "How many " + chosen.Name + "s: " + err.Error() + "."
		return need
	}
	f.ShapeSummary = fmt.Sprintf("%d × %s = %s", n, chosen.Name, shapeNeeds(*chosen, units, n))
	return chosen.Need(n)
}
