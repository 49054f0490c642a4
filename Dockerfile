# The hookgate image: the static binary, CA certificates and nothing else.
#
#   docker build -t hookgate --build-arg VERSION=v1.2.0 .
#   docker run -p 8080:8080 -v hookgate:/var/lib/hookgate hookgate
#
# Without arguments it serves the demo source on SQLite in the volume
# (/var/lib/hookgate/hookgate.db), listening on every interface; give it a
# config with `serve --config /etc/hookgate/hookgate.yaml` (or
# HOOKGATE_CONFIG) and mount the file. deploy/image.sh builds the same
# final stage with buildah from a locally built binary and runs it from
# the image's exported filesystem (docs/deploy.md, "Containers").

FROM golang:1.26 AS build
# The release stamped into the binary (hookgate version); empty: the
# module's own version, "(devel)" for a checkout.
ARG VERSION=
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: the SQLite driver is pure Go, so the binary needs no libc
# and runs on scratch. The state directory is made here because scratch
# has no mkdir; /tmp for SQLite's temporary files.
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/hookgate/hookgate/internal/cli.version=${VERSION}" \
      -o /out/hookgate ./cmd/hookgate \
 && mkdir -p /out/var/lib/hookgate /out/tmp && chmod 1777 /out/tmp

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/tmp /tmp
COPY --from=build --chown=65532:65532 /out/var/lib/hookgate /var/lib/hookgate
COPY --from=build /out/hookgate /hookgate
# Not root: the uid distroless calls nonroot; the volume's directory is its.
USER 65532:65532
WORKDIR /var/lib/hookgate
VOLUME /var/lib/hookgate
EXPOSE 8080
# No shell or curl here: hookgate asks its own /readyz, on the listen
# address of $HOOKGATE_CONFIG (127.0.0.1:8080 without one).
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 \
  CMD ["/hookgate", "healthcheck"]
ENTRYPOINT ["/hookgate"]
# serve's default address is 127.0.0.1:8080, which nothing outside the
# container reaches. A command of your own (serve --config F) replaces
# this one whole, and the config's listen applies.
CMD ["serve", "--listen", "0.0.0.0:8080"]
