package web

import (
	"strconv"

	"github.com/clearhouse/clearhouse"
	"github.com/gin-gonic/gin"
)

// page is the part of a list a request asks for with ?limit= and ?before=: at most
// Limit rows, the newest with ids below Before (0: from the newest of all). Every
// paged list, on the pages and in the JSON API, reads them with parsePage or
// parseBefore, so a bad value gets the same message everywhere.
type page struct {
	Limit  int
	Before int64
}

// parsePage reads ?limit= (a whole number from 1 to most; def when absent) and
// ?before=, or EINVALID naming the parameter at fault.
func parsePage(c *gin.Context, def, most int) (page, error) {
	p := page{Limit: def}
	if raw := c.Query("limit"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > most {
			return page{}, clearhouse.Errorf(clearhouse.EINVALID, "limit: must be a whole number from 1 to %d", most)
		}
		p.Limit = n
	}
	before, err := parseBefore(c)
	if err != nil {
		return page{}, err
	}
	p.Before = before
	return p, nil
}

// parseBefore reads ?before=, the id a list's next link carries (0 when absent), or
// EINVALID.
func parseBefore(c *gin.Context) (int64, error) {
	raw := c.Query("before")
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 1 {
		return 0, clearhouse.Errorf(clearhouse.EINVALID, "before: must be an id of 1 or more, as a list's next link gives")
	}
	return n, nil
}
