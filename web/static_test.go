package web

import (
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/fstest"
	"time"

	"github.com/clearhouse/clearhouse/static"
)

// A static file goes with a Cache-Control and an ETag, so a browser fetches it
// once and not with every page; asked again with the ETag it gets a 304 without a
// body; and it needs no session: the server here has no identity service, so a
// session lookup would fail the request.
func TestStaticFilesAreCacheable(t *testing.T) {
	t.Parallel()
	s := NewServer(Config{PublicURL: "http://127.0.0.1"}, Services{}, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Now)
	want, err := fs.ReadFile(static.FS, "app.css")
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.AddCookie(&http.Cookie{Name: sessionCookie, Value: "a-session-nobody-looks-up"})
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	rec := get("/static/app.css")
	if rec.Code != http.StatusOK || rec.Body.String() != string(want) {
		t.Fatalf("/static/app.css: %d, %d bytes, want 200 and the file's %d", rec.Code, rec.Body.Len(), len(want))
	}
	h := rec.Header()
	if got := h.Get("Cache-Control"); got != "public, max-age=300" {
		t.Errorf("Cache-Control %q, want public, max-age=300", got)
	}
	if got := h.Get("Content-Type"); got != "text/css; charset=utf-8" {
		t.Errorf("Content-Type %q", got)
	}
	if got := h.Values("Set-Cookie"); len(got) > 0 {
		t.Errorf("a cacheable file sets cookies: %q", got)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("the static file lost the security headers")
	}
	etag := h.Get("ETag")
	if len(etag) < 10 {
		t.Fatalf("ETag %q", etag)
	}
	if rec := get("/static/app.css", "If-None-Match", etag); rec.Code != http.StatusNotModified || rec.Body.Len() != 0 {
		t.Errorf("asked again with its ETag: %d and %d bytes, want 304 and none", rec.Code, rec.Body.Len())
	}
	if rec := get("/static/app.css", "If-None-Match", `"another"`); rec.Code != http.StatusOK || rec.Body.Len() != len(want) {
		t.Errorf("asked with another ETag: %d and %d bytes, want 200 and the file", rec.Code, rec.Body.Len())
	}
	if rec := get("/static/curve.js"); rec.Code != http.StatusOK || rec.Header().Get("ETag") == etag {
		t.Errorf("/static/curve.js: %d, ETag %q (app.css's %q)", rec.Code, rec.Header().Get("ETag"), etag)
	}
	for _, path := range []string{"/static/nothing.css", "/static/", "/static/../static.go"} {
		if rec := get(path); rec.Code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404", path, rec.Code)
		}
	}
}

// A file's ETag changes with its content, so a browser that revalidates after a
// release gets the new file.
func TestStaticETagFollowsTheContent(t *testing.T) {
	t.Parallel()
	before, err := readStatic(fstest.MapFS{"app.css": {Data: []byte("body { color: black }")}})
	if err != nil {
		t.Fatal(err)
	}
	after, err := readStatic(fstest.MapFS{"app.css": {Data: []byte("body { color: navy }")}})
	if err != nil {
		t.Fatal(err)
	}
	if before["app.css"].etag == after["app.css"].etag {
		t.Errorf("two contents, one ETag %s", before["app.css"].etag)
	}
}
