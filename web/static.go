package web

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"
)

// staticCacheAge is how long a browser reuses a static file without asking again.
// The files' URLs carry no version, so a new release's styles and scripts reach
// every browser within this time; after it the browser asks again with the file's
// ETag, and an unchanged file costs a 304 without a body.
const staticCacheAge = 5 * time.Minute

// staticFile is one file of the static folder as the server sends it.
type staticFile struct {
	body []byte
	etag string // a strong validator: a hash of body
}

// readStatic reads every file of fsys into memory, each with its ETag. The files
// are embedded in the binary: they never change while the server runs.
func readStatic(fsys fs.FS) (map[string]staticFile, error) {
	files := map[string]staticFile{}
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(body)
		files[path] = staticFile{body: body, etag: `"` + hex.EncodeToString(sum[:12]) + `"`}
		return nil
	})
	return files, err
}

// staticRoutes serves files at /static/<path> with a Cache-Control and an ETag, so a
// browser fetches the stylesheet, the icon and the scripts once rather than with
// every page. It is registered before withIdentity and withCSRF: the files are the
// same for everyone, so a request for one neither looks up a session nor sets a
// cookie (a response a browser caches must not).
func (s *Server) staticRoutes(e *gin.Engine, fsys fs.FS) {
	files, err := readStatic(fsys)
	if err != nil { // an embedded folder reads without error; a test's broken one does not
		panic("web: reading the static files: " + err.Error())
	}
	serve := func(c *gin.Context) {
		name := strings.TrimPrefix(c.Param("filepath"), "/")
		f, ok := files[name]
		if !ok {
			s.notFound(c)
			return
		}
		h := c.Writer.Header()
		h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(staticCacheAge/time.Second)))
		h.Set("ETag", f.etag)
		// ServeContent answers If-None-Match with 304, and HEAD and ranges, and sets
		// the Content-Type from the name's extension.
		http.ServeContent(c.Writer, c.Request, name, time.Time{}, bytes.NewReader(f.body))
	}
	e.GET("/static/*filepath", serve)
	e.HEAD("/static/*filepath", serve)
}
