package web

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/fleet"
	"github.com/gin-gonic/gin"
)

// quoteFresh is how long a quote lets the team press Reserve: prices move as
// other teams reserve, so an older quote is made again first.
const quoteFresh = 15 * time.Minute

// quoteToken binds a quote to the request quoted (every field of the form but
// the value, which the scheduler never sees and which does not change the
// price), the team, and the time of the quote. It is a MAC keyed with the
// session's CSRF token, so it is good only in the session that asked.
func (s *Server) quoteToken(c *gin.Context, d fleet.Definition, at time.Time) string {
	return strconv.FormatInt(at.Unix(), 10) + "." + s.quoteMAC(c, d, at.Unix())
}

func (s *Server) quoteMAC(c *gin.Context, d fleet.Definition, at int64) string {
	d.Team, d.Value = userOf(c).TeamID, 0
	if d.Language == "" {
		d.Language = "ALL"
	}
	body, _ := json.Marshal(d) // maps encode in key order: the same request, the same bytes
	mac := hmac.New(sha256.New, []byte(s.csrfToken(c)))
	fmt.Fprintf(mac, "reservation-quote|%d|", at)
	mac.Write(body)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// quoteProblem says why a Reserve may not go ahead ("" when it may): no quote,
// a quote of other values than the form's now, or a quote too old.
func (s *Server) quoteProblem(c *gin.Context, d fleet.Definition, token string) string {
	at, mac, ok := strings.Cut(token, ".")
	unix, err := strconv.ParseInt(at, 10, 64)
	if token == "" || !ok || err != nil {
		return "get a quote first. Reserve takes the request quoted, so you see its price before it is held on your budget. Here is a quote for the values in the form: check it, then press Reserve."
	}
	if !hmac.Equal([]byte(mac), []byte(s.quoteMAC(c, d, unix))) {
		return "the form was changed after the quote. Here is a quote for the values in the form now: check it, then press Reserve."
	}
	if age := s.now().Sub(time.Unix(unix, 0)); age > quoteFresh || age < -time.Minute {
		return fmt.Sprintf("the quote is more than %d minutes old and prices may have moved. Here is a fresh quote: check it, then press Reserve.", int(quoteFresh.Minutes()))
	}
	return ""
}
