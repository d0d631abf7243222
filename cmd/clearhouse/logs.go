package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"
)

// logFlags are --log-format and --log-level.
type logFlags struct {
	format, level string
}

func (l *logFlags) register(f *pflag.FlagSet) {
	f.StringVar(&l.format, "log-format", "text", "log format: text (logfmt-like key=value) or json (one object a line)")
	f.StringVar(&l.level, "log-level", "info", "least severe level logged: debug, info, warn or error")
}

// logger returns the slog logger the flags describe, writing to w.
func (l logFlags) logger(w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(l.level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: must be debug, info, warn or error", l.level)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(l.format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: must be text or json", l.format)
}
