# syntax=docker/dockerfile:1
# Multi-stage build of Clearhouse's two binaries, in one image: clearhouse (the server
# and every verb; the image's entrypoint) and clearhouse-agent (the cluster agent with
# every backend, kubernetes included; deploy/kubernetes/agent.yaml runs it as the
# container's command). cgo is on: the embedded store is SQLite through
# mattn/go-sqlite3, so builder and runtime share Debian bookworm's glibc.
#
# Base images: pin them by digest for reproducible builds. The defaults are tags
# because no registry was reachable where this file was written; `make docker`
# passes GO_IMAGE and RUNTIME_IMAGE, and docs/operating.md ("Docker") says how to
# look up the digests and pin them (image@sha256:...).
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/root/go/pkg/mod go mod download
COPY . .
ARG VERSION=docker
RUN --mount=type=cache,target=/root/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/clearhouse ./cmd/clearhouse \
    && CGO_ENABLED=1 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/clearhouse-agent ./cmd/clearhouse-agent

FROM ${RUNTIME_IMAGE}
ARG VERSION=docker
LABEL org.opencontainers.image.title="clearhouse" org.opencontainers.image.version="${VERSION}"
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 clearhouse \
    && useradd --system --uid 10001 --gid clearhouse --home-dir /var/lib/clearhouse \
       --create-home --shell /usr/sbin/nologin clearhouse
COPY --from=build /out/clearhouse /usr/local/bin/clearhouse
COPY --from=build /out/clearhouse-agent /usr/local/bin/clearhouse-agent
USER clearhouse:clearhouse
WORKDIR /var/lib/clearhouse
VOLUME /var/lib/clearhouse
ENV CLEARHOUSE_ADDR=0.0.0.0:8080
EXPOSE 8080
# /readyz through the binary itself (the image has no curl): the database answers,
# the schema is this binary's, the scheduler runs. health reads CLEARHOUSE_ADDR.
HEALTHCHECK --interval=30s --timeout=10s --start-period=60s --retries=3 \
    CMD ["/usr/local/bin/clearhouse", "health", "--timeout", "5s"]
ENTRYPOINT ["/usr/local/bin/clearhouse"]
CMD ["serve"]
