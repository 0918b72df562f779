#!/usr/bin/env bash
# Re-pin the image's base (deploy/Dockerfile's FROM lines) to the digest its tag points at now.
#
#   scripts/bump_base_image.sh             resolve the tag's current digest and rewrite the pins
#   scripts/bump_base_image.sh --check     say whether the pin is current; exit 1 when it is not
#   scripts/bump_base_image.sh sha256:HEX  pin this digest (resolved elsewhere, e.g. offline)
#
# The digest is the multi-arch index (what `docker pull TAG` resolves), found with the first of
# `crane digest`, `docker buildx imagetools inspect` or Docker Hub's registry API (curl) that
# works. Every stage's FROM and the org.opencontainers.image.base.digest label move together, so
# the build stage and the runtime stage never disagree. DOCKERFILE=path picks another file.
# Review the base's changes (docker-library/repo-info, repos/python/remote/TAG.md) before you
# commit a bump, then rebuild and run the tests.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dockerfile="${DOCKERFILE:-$here/../deploy/Dockerfile}"

# the pinned reference: the first FROM line with a digest, e.g. python:3.11-slim-bookworm@sha256:…
pinned="$(sed -nE 's/^FROM[[:space:]]+([^[:space:]]+@sha256:[0-9a-f]{64}).*/\1/p' "$dockerfile" | head -1)"
if [[ -z "$pinned" ]]; then
  echo "$dockerfile: no FROM line pinned by digest (expected FROM IMAGE:TAG@sha256:…)" >&2
  exit 2
fi
tag="${pinned%@*}"
old="${pinned#*@}"

resolve() {
  local ref="$1" digest=""
  if command -v crane >/dev/null 2>&1; then
    digest="$(crane digest "$ref" 2>/dev/null || true)"
  fi
  if [[ -z "$digest" ]] && command -v docker >/dev/null 2>&1; then
    digest="$(docker buildx imagetools inspect "$ref" 2>/dev/null | awk '/^Digest:/ {print $2; exit}' || true)"
  fi
  if [[ -z "$digest" ]] && command -v curl >/dev/null 2>&1 && [[ "$ref" != */* || "$ref" == docker.io/* ]]; then
    # an official image on Docker Hub: an anonymous pull token, then HEAD on the tag's manifest
    local repo="${ref#docker.io/}" name tagpart token
    name="${repo%%:*}"
    tagpart="${repo#*:}"
    [[ "$name" == */* ]] || name="library/$name"
    token="$(curl -fsS "https://auth.docker.io/token?service=registry.docker.io&scope=repository:$name:pull" |
      sed -nE 's/.*"token":"([^"]+)".*/\1/p' || true)"
    digest="$(curl -fsSI -H "Authorization: Bearer $token" \
      -H "Accept: application/vnd.oci.image.index.v1+json" \
      -H "Accept: application/vnd.docker.distribution.manifest.list.v2+json" \
      "https://registry-1.docker.io/v2/$name/manifests/$tagpart" |
      tr -d '\r' | awk 'tolower($1) == "docker-content-digest:" {print $2; exit}' || true)"
  fi
  [[ "$digest" =~ ^sha256:[0-9a-f]{64}$ ]] || return 1
  echo "$digest"
}

case "${1:-}" in
  sha256:*)
    new="$1"
    [[ "$new" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "not a sha256 digest: $new" >&2; exit 2; }
    ;;
  "" | --check)
    if ! new="$(resolve "$tag")"; then
      echo "cannot resolve $tag (needs crane, docker buildx or curl and access to the registry);" >&2
      echo "resolve it elsewhere and run: $0 sha256:…" >&2
      exit 2
    fi
    ;;
  *)
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac

if [[ "$new" == "$old" ]]; then
  echo "$tag is pinned at its current digest $old"
  exit 0
fi
if [[ "${1:-}" == "--check" ]]; then
  echo "$tag: pinned $old, the tag now points at $new (run $0 to bump)"
  exit 1
fi
# every occurrence: each stage's FROM and the base.digest label
sed -i "s/$old/$new/g" "$dockerfile"
echo "$tag: $old -> $new in $dockerfile"
