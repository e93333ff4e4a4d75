# syntax=docker/dockerfile:1
#
# zkgo's container image: a static binary on distroless/static, as a
# non-root user, data in the /data volume. README.md, "Packages":
#
#   docker build -t zkgo \
#     --build-arg VERSION="$(git describe --tags --always --dirty)" \
#     --build-arg REVISION="$(git rev-parse HEAD)" \
#     --build-arg BUILD_TIME="$(git log -1 --format=%cI)" .
#   docker run -d --name zk -p 2181:2181 -p 8080:8080 -v zk-data:/data zkgo
#
# The entrypoint ("zkgo container") takes the official Apache ZooKeeper
# image's variables (ZOO_MY_ID, ZOO_SERVERS, ZOO_CFG_EXTRA, ...; see
# packaging/compose.yaml for an ensemble) or a zoo.cfg mounted at
# /conf/zoo.cfg. Arguments after the image name are "zkgo server" flags
# after "--": docker run zkgo -- -log-format json

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# No cgo (a static binary), no VCS stamping (the version comes from the
# build arguments: .git is not in the build context).
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
ARG REVISION=
ARG BUILD_TIME=
ARG TARGETOS
ARG TARGETARCH
# The same flags as scripts/release.sh.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=${TARGETOS} GOARCH=${TARGETARCH} go build -trimpath \
      -ldflags "-s -w -X main.buildVersion=${VERSION} -X main.buildRevision=${REVISION} -X main.buildTime=${BUILD_TIME}" \
      -o /out/zkgo ./cmd/zkgo \
 && mkdir -p /out/data /out/conf

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/zkgo /usr/local/bin/zkgo
COPY packaging/zoo.cfg /etc/zkgo/zoo.cfg
# Owned by the image's user (65532, "nonroot"): a new named volume takes
# this ownership; a bind-mounted directory must be writable by 65532.
# /conf receives the generated zoo.cfg (and reconfig's dynamic file).
COPY --from=build --chown=65532:65532 /out/data /data
COPY --from=build --chown=65532:65532 /out/conf /conf
USER 65532:65532
ENV ZOO_CONF_DIR=/conf
VOLUME ["/data"]
# client, peer, election (accepted, unused: raft elects over the peer
# port), AdminServer, Prometheus metrics
EXPOSE 2181 2888 3888 8080 7000
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 \
  CMD ["/usr/local/bin/zkgo", "health", "-q", "-server", "127.0.0.1:2181"]
# docker stop sends SIGTERM: a graceful stop, sessions kept for the restart.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/zkgo", "container"]
