#!/usr/bin/env bash
# Builds zkgo's release binaries: static (CGO_ENABLED=0), -trimpath, for
# linux and darwin on amd64 and arm64, with the version, commit and commit
# time set by the linker (what "zkgo version" and srvr report), into dist/
# with SHA256SUMS. Offline with a filled module cache.
#
#   bash scripts/release.sh                  # version from the newest v* tag (git describe), else "dev"
#   VERSION=v1.2.0 bash scripts/release.sh
#   TARGETS="linux/amd64" DIST=/tmp/out bash scripts/release.sh
#   (cd dist && sha256sum -c SHA256SUMS)
#
# REVISION and BUILD_TIME (RFC 3339) override what git says. The build
# time is the commit's, so that two builds of one commit are the same
# bytes.
set -euo pipefail
cd "$(dirname "$0")/.."
dist="${DIST:-dist}"
targets="${TARGETS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}"

version="${VERSION:-$(git describe --tags --match 'v[0-9]*' 2>/dev/null || echo dev)}"
revision="${REVISION:-}"
if [ -z "$revision" ] && revision="$(git rev-parse HEAD 2>/dev/null)"; then
	# Tracked files changed: the binary is not exactly that commit.
	if [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]; then
		revision="$revision-dirty"
	fi
fi
build_time="${BUILD_TIME:-$(git log -1 --format=%cI 2>/dev/null || true)}"

case "$version" in
*[!A-Za-z0-9.+_-]*) echo "release.sh: VERSION $version: only letters, digits and . + _ -" >&2; exit 2 ;;
esac

mkdir -p "$dist"
rm -f "$dist"/zkgo-* "$dist"/SHA256SUMS
ldflags="-s -w -X main.buildVersion=$version -X main.buildRevision=$revision -X main.buildTime=$build_time"
names=()
for target in $targets; do
	os="${target%/*}"
	arch="${target#*/}"
	name="zkgo-$version-$os-$arch"
	echo "release.sh: $name"
	CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" go build -trimpath -buildvcs=false \
		-ldflags "$ldflags" -o "$dist/$name" ./cmd/zkgo
	names+=("$name")
done
(
	cd "$dist"
	if command -v sha256sum >/dev/null; then
		sha256sum "${names[@]}"
	else
		shasum -a 256 "${names[@]}"
	fi
) > "$dist/SHA256SUMS"
echo "release.sh: $dist/SHA256SUMS"
cat "$dist/SHA256SUMS"
