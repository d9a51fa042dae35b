#!/usr/bin/env bash
# Static checks run by CI before the tests: lint, formatting, and types (strict on the pure core).
# The pure core is the part that imports no I/O library: names, ring, load model, decision engine
# (the leader and its cycle), ownership state machine, dispatchers, Kafka assignors and KIP-848
# reconciliation.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy --strict brokerlb/naming.py brokerlb/ring brokerlb/model brokerlb/loadbalance brokerlb/ownership \
  brokerlb/dispatch brokerlb/messaging brokerlb/mledger brokerlb/kafka/assignors brokerlb/kafka/reconciliation.py \
  brokerlb/kafka/checker.py
.venv/bin/mypy brokerlb
