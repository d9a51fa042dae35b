#!/usr/bin/env bash
# Install what is missing, then run the main job: `brokerlb demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
BROKERLB_BROWSER_TESTS=0 scripts/setup.sh
exec .venv/bin/brokerlb demo "$@"
