package web

import (
	"encoding/csv"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/clearhouse/clearhouse"
	apiv1 "github.com/clearhouse/clearhouse/api/v1"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/templates"
	"github.com/gin-gonic/gin"
)

// lostRows are the lost-value rows for the scheduler page, newest day first.
func lostRows(days []fleet.LostDay) []templates.LostDayRow {
	out := make([]templates.LostDayRow, 0, len(days))
	for i := len(days) - 1; i >= 0; i-- {
		d := days[i]
		out = append(out, templates.LostDayRow{Day: d.Day.Format(time.DateOnly), Pool: d.Pool, NoRoom: mon(d.NoRoom),
			PricedOut: mon(d.PricedOut), NotHonoured: mon(d.NotHonoured), Total: mon(d.Total()), Bids: d.Bids})
	}
	return out
}

// apiLostValue is GET /api/v1/lost-value: per pool and day, the value of bids
// refused (no room, priced out) and of reservations not honoured.
func (s *Server) apiLostValue(c *gin.Context) {
	from, to, err := s.period(c, lostDays)
	if err != nil {
		s.fail(c, err)
		return
	}
	days, err := s.svc.Reservations.LostByDay(c.Request.Context(), from, to)
	if err != nil {
		s.fail(c, err)
		return
	}
	out := []apiv1.LostDay{}
	for _, d := range days {
		out = append(out, apiv1.LostDay{Day: d.Day.Format(time.DateOnly), Pool: d.Pool, NoRoom: d.NoRoom.Plain(), PricedOut: d.PricedOut.Plain(),
			NotHonoured: d.NotHonoured.Plain(), Total: d.Total().Plain(), Bids: d.Bids})
	}
	c.JSON(http.StatusOK, apiv1.LostValue{From: from.Format(time.DateOnly), To: to.AddDate(0, 0, -1).Format(time.DateOnly), Days: out})
}

// lostValueCSV downloads the lost value per pool and day.
func (s *Server) lostValueCSV(c *gin.Context) {
	from, to, err := s.period(c, lostDays)
	if err != nil {
		s.fail(c, err)
		return
	}
	days, err := s.svc.Reservations.LostByDay(c.Request.Context(), from, to)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.Header("Content-Type", "text/csv; charset=utf-8")
	c.Header("Content-Disposition", fmt.Sprintf(`attachment; filename="lost-value-%s.csv"`, from.Format("20060102")))
	w := csv.NewWriter(c.Writer)
	_ = w.Write([]string{"day", "pool", "no_room", "priced_out", "not_honoured", "total", "bids"})
	for _, d := range days {
		_ = w.Write([]string{d.Day.Format(time.DateOnly), clearhouse.CSVText(d.Pool), d.NoRoom.CSV(), d.PricedOut.CSV(),
			d.NotHonoured.CSV(), d.Total().CSV(), strconv.Itoa(d.Bids)})
	}
	w.Flush()
}
