#!/usr/bin/env bash
# Builds the image's final stage (Dockerfile) with buildah from a binary
# built here, then runs that binary from the image's exported filesystem:
# deploy/image_test.go serves the demo, asks /healthz, runs the image's
# HEALTHCHECK and checks the image's config against the Dockerfile.
#
# `docker build` cannot run on a machine without a container runtime or a
# registry (no golang:1.26 to build in, no RUN step), so the build stage
# is replaced by the same `go build` on this machine; the final stage,
# FROM scratch, needs neither and is built as the Dockerfile says.
#
#   apt-get install -y buildah     # Debian's; run as root
#   deploy/image.sh [VERSION]
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
image=localhost/hookgate:latest
export BUILDAH_FORMAT=docker   # HEALTHCHECK is Docker's: an OCI image has no such field
work=$(mktemp -d)
ctr=
cleanup() {
  [ -n "$ctr" ] && buildah rm "$ctr" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "== go build (the Dockerfile's build stage)"
CGO_ENABLED=0 go build -trimpath \
  -ldflags "-s -w -X github.com/hookgate/hookgate/internal/cli.version=${version}" \
  -o "$work/hookgate" ./cmd/hookgate
mkdir -p "$work/state" "$work/tmp"
chmod 1777 "$work/tmp"

echo "== buildah: the final stage, FROM scratch"
ctr=$(buildah from scratch)
buildah copy "$ctr" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt >/dev/null
buildah copy "$ctr" "$work/tmp" /tmp >/dev/null
buildah copy --chown 65532:65532 "$ctr" "$work/state" /var/lib/hookgate >/dev/null
buildah copy "$ctr" "$work/hookgate" /hookgate >/dev/null
# buildah splits --healthcheck's command on spaces (JSON form is not read).
buildah config \
  --user 65532:65532 \
  --workingdir /var/lib/hookgate \
  --volume /var/lib/hookgate \
  --port 8080/tcp \
  --healthcheck 'CMD /hookgate healthcheck' \
  --healthcheck-interval 10s --healthcheck-timeout 5s \
  --healthcheck-start-period 10s --healthcheck-retries 3 \
  --entrypoint '["/hookgate"]' \
  --cmd '["serve", "--listen", "0.0.0.0:8080"]' \
  "$ctr"
buildah commit --rm "$ctr" "$image" >/dev/null
ctr=

echo "== export the image's filesystem and run its binary from it"
ctr=$(buildah from "$image")
mnt=$(buildah mount "$ctr")
mkdir "$work/rootfs"
cp -a "$mnt/." "$work/rootfs/"
buildah umount "$ctr" >/dev/null
buildah inspect --type image "$image" >"$work/image.json"
(cd deploy && HOOKGATE_IMAGE_ROOTFS="$work/rootfs" HOOKGATE_IMAGE_INSPECT="$work/image.json" \
  go test -count=1 -v -run '^TestImage$' ./...)
echo "== $image built; $(buildah images --format '{{.Size}}' "$image")"
