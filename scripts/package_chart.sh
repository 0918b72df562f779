#!/usr/bin/env bash
# Package the Helm chart for a release, pinned to the image that release pushed.
#
#   scripts/package_chart.sh VERSION IMAGE DIGEST OUTDIR
#   e.g. scripts/package_chart.sh 0.2.0 ghcr.io/gpubot/gpubot sha256:0123… dist/
#
# Copies deploy/helm/gpubot to a scratch directory, checks that VERSION is the chart's version and
# appVersion (the package version, pyproject.toml), writes IMAGE into image.repository and DIGEST
# into image.digest of that copy's values.yaml (so the published chart runs exactly the image built
# with it, whatever the tag later points at), and runs `helm package` into OUTDIR. Prints the
# packaged file's path. The checkout is never changed. Needs helm (or GPUBOT_HELM naming one).
set -euo pipefail

if [ "$#" -ne 4 ]; then
  echo "usage: $0 VERSION IMAGE DIGEST OUTDIR" >&2
  exit 2
fi
version=$1 image=$2 digest=$3 outdir=$4
helm_bin=${GPUBOT_HELM:-helm}
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

if ! [[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.-]+)?$ ]]; then
  echo "$0: version $version is not X.Y.Z" >&2
  exit 2
fi
if ! [[ $image =~ ^[a-z0-9.-]+(:[0-9]+)?(/[a-z0-9._-]+)+$ ]]; then
  echo "$0: image $image is not a lower-case REGISTRY/PATH without a tag" >&2
  exit 2
fi
if ! [[ $digest =~ ^sha256:[0-9a-f]{64}$ ]]; then
  echo "$0: digest $digest is not sha256:<64 hex>" >&2
  exit 2
fi

chart_yaml="$root/deploy/helm/gpubot/Chart.yaml"
for key in version appVersion; do
  found=$(sed -n "s/^$key: *\"\\{0,1\\}\\([^\"]*\\)\"\\{0,1\\} *$/\\1/p" "$chart_yaml")
  if [ "$found" != "$version" ]; then
    echo "$0: Chart.yaml $key is ${found:-missing}, not $version (bump it with pyproject.toml)" >&2
    exit 1
  fi
done

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -R "$root/deploy/helm/gpubot" "$scratch/gpubot"
values="$scratch/gpubot/values.yaml"
# the two lines under image: are written exactly so in values.yaml; fail if that ever changes
if ! grep -q '^  repository: ' "$values" || ! grep -q '^  digest: ""$' "$values"; then
  echo "$0: values.yaml has no image.repository / empty image.digest line to set" >&2
  exit 1
fi
sed -i.bak -e "0,/^  repository: .*/s||  repository: $image|" -e "s|^  digest: \"\"$|  digest: \"$digest\"|" "$values"
rm -f "$values.bak"

mkdir -p "$outdir"
"$helm_bin" package "$scratch/gpubot" --destination "$outdir" >/dev/null
echo "$outdir/gpubot-$version.tgz"
