package web

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	"github.com/gin-gonic/gin"
)

// Request bodies are bounded before anything reads them: an HTML form or a JSON body
// may be at most defaultBodyLimit bytes, except on the routes in bodyLimits. A body
// over its route's bound is refused with 413 (at once when Content-Length says so,
// else as soon as the bound is read past).
const defaultBodyLimit = 64 << 10

// bodyLimits are the routes (gin's full paths) that need more than defaultBodyLimit.
var bodyLimits = map[string]int64{
	"/api/v1/clusters/:cluster/updates": 1 << 20, // a cluster agent's report of usage and job ends
}

// maxIdempotencyKey bounds the Idempotency-Key header.
const maxIdempotencyKey = 200

// ctxBody holds an API request's body, read (within its bound) and checked by
// withCleanInput, for decodeJSON.
const ctxBody = "body"

// withCleanInput refuses, before any handler or the database sees them, requests
// whose path, query, form fields, JSON strings and keys, or the headers the app reads
// hold a NUL byte or invalid UTF-8 (400 naming where), and bounds every request body
// (413). No route takes a multipart body, so one is refused (415) without being read.
// A URL-encoded form is parsed here, within the bound, so later readers (the CSRF
// check, handlers) never parse a body themselves. Under /api/ a body is JSON whatever
// its content type, and must pass checkJSON.
func (s *Server) withCleanInput() gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := s.checkURLAndHeaders(c.Request); err != nil {
			s.fail(c, err)
			return
		}
		if status, err := s.checkBody(c); err != nil {
			if status == 0 {
				s.fail(c, err)
			} else {
				s.abort(c, status, clearhouse.EINVALID, clearhouse.ErrorMessage(err))
			}
			return
		}
		c.Next()
	}
}

// checkText says what is wrong with s, if anything, for the database and the logs:
// a NUL byte (PostgreSQL cannot store one in text) or invalid UTF-8.
func checkText(where, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s: must not contain a NUL byte", where)
	}
	if !utf8.ValidString(s) {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s: must be valid UTF-8", where)
	}
	return nil
}

// named describes a parameter by its name when the name is short and clean, so that
// a message never repeats bad or unbounded input.
func named(kind, name string) string {
	if len(name) > 64 || checkText("", name) != nil {
		return "a " + kind + "'s name"
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// checkValues checks every name and value of a query or form.
func checkValues(kind string, vs url.Values) error {
	for k, list := range vs {
		if err := checkText(named(kind, k), k); err != nil {
			return err
		}
		for _, v := range list {
			if err := checkText(named(kind, k), v); err != nil {
				return err
			}
		}
	}
	return nil
}

// readHeaders are the request headers the app reads; the configured proxy header is
// added to them.
var readHeaders = []string{"Authorization", "Idempotency-Key", "X-CSRF-Token", "X-Forwarded-For", "Content-Type"}

func (s *Server) checkURLAndHeaders(r *http.Request) error {
	if err := checkText("path", r.URL.Path); err != nil {
		return err
	}
	q, _ := url.ParseQuery(r.URL.RawQuery) // malformed pairs are dropped, as handlers see them
	if err := checkValues("query parameter", q); err != nil {
		return err
	}
	headers := readHeaders
	if s.cfg.ProxyHeader != "" {
		headers = append(headers[:len(headers):len(headers)], s.cfg.ProxyHeader)
	}
	for _, h := range headers {
		for _, v := range r.Header.Values(h) {
			if err := checkText("header "+h, v); err != nil {
				return err
			}
		}
	}
	if k := r.Header.Get("Idempotency-Key"); len(k) > maxIdempotencyKey {
		return clearhouse.Errorf(clearhouse.EINVALID, "header Idempotency-Key: must be at most %d bytes", maxIdempotencyKey)
	}
	if s.cfg.ProxyHeader != "" && len(r.Header.Get(s.cfg.ProxyHeader)) > maxEmail {
		return clearhouse.Errorf(clearhouse.EINVALID, "header %s: must be at most %d bytes", s.cfg.ProxyHeader, maxEmail)
	}
	return nil
}

// bodyLimit is the bound on the body of c's route.
func bodyLimit(c *gin.Context) int64 {
	if n, ok := bodyLimits[c.FullPath()]; ok {
		return n
	}
	return defaultBodyLimit
}

// checkBody bounds and checks the request body. A non-zero status goes with errors
// that are not 400s (413, 415).
func (s *Server) checkBody(c *gin.Context) (int, error) {
	r := c.Request
	if r.Body == nil || r.Body == http.NoBody {
		return 0, nil
	}
	limit := bodyLimit(c)
	tooLarge := clearhouse.Errorf(clearhouse.EINVALID, "body: must be at most %d KiB", limit>>10)
	if r.ContentLength > limit {
		return http.StatusRequestEntityTooLarge, tooLarge
	}
	media, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if strings.HasPrefix(media, "multipart/") {
		return http.StatusUnsupportedMediaType, clearhouse.Errorf(clearhouse.EINVALID,
			"body: multipart bodies are not accepted; send a URL-encoded form or JSON")
	}
	r.Body = http.MaxBytesReader(c.Writer, r.Body, limit)
	var tooBig *http.MaxBytesError
	switch {
	case isAPI(c):
		data, err := io.ReadAll(r.Body)
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, tooLarge
		} else if err != nil {
			return 0, clearhouse.Errorf(clearhouse.EINVALID, "body: could not be read")
		}
		r.Body = io.NopCloser(bytes.NewReader(data))
		c.Set(ctxBody, data)
		if len(bytes.TrimSpace(data)) > 0 {
			return 0, checkJSON(data)
		}
	case media == "application/x-www-form-urlencoded":
		err := r.ParseForm()
		if errors.As(err, &tooBig) {
			return http.StatusRequestEntityTooLarge, tooLarge
		} else if err != nil {
			return 0, clearhouse.Errorf(clearhouse.EINVALID, "form: is not a well-formed URL-encoded form")
		}
		return 0, checkValues("form field", r.PostForm)
	}
	return 0, nil
}
