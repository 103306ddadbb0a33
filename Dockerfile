# syntax=docker/dockerfile:1
# Hooklane: a static binary from ./cmd/hooklane on a distroless, non-root
# runtime. Build: docker build -t hooklane .
# Configuration is by HOOKLANE_* environment variables (API.md §9).

FROM golang:1.26-bookworm AS build
WORKDIR /src
# Dependencies first, so code edits reuse the module download layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# CGO off: the embedded store uses the pure-Go SQLite driver, so the binary
# is fully static and runs on distroless/static.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
	CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/hooklane ./cmd/hooklane \
	&& mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hooklane /usr/local/bin/hooklane
# The embedded store's directory, writable by the nonroot user (65532).
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
ENV HOOKLANE_LISTEN=0.0.0.0:8080 \
	HOOKLANE_DATA_DIR=/data
EXPOSE 8080
VOLUME ["/data"]
ENTRYPOINT ["/usr/local/bin/hooklane"]
CMD ["serve"]
