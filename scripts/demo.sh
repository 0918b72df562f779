#!/usr/bin/env bash
# The demo: diagnoses on the bundled scenarios, each against a freshly started simulated cluster.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=scripts/bootstrap.sh
source "$here/bootstrap.sh"
cd "$here/.."
exec gpubot demo "$@"
