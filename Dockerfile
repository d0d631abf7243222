# syntax=docker/dockerfile:1
# Multi-stage build of the one clearhouse binary. cgo is on: the embedded store is
# SQLite through mattn/go-sqlite3, so builder and runtime share Debian bookworm's glibc.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=docker
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/clearhouse ./cmd/clearhouse

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 clearhouse \
    && useradd --system --uid 10001 --gid clearhouse --home-dir /var/lib/clearhouse \
       --create-home --shell /usr/sbin/nologin clearhouse
COPY --from=build /out/clearhouse /usr/local/bin/clearhouse
USER clearhouse:clearhouse
WORKDIR /var/lib/clearhouse
VOLUME /var/lib/clearhouse
ENV CLEARHOUSE_ADDR=0.0.0.0:8080
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/clearhouse"]
CMD ["serve"]
