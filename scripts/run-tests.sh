#!/usr/bin/env bash
# Install what is missing, then run the whole test suite (ZooKeeper, Spark and Chromium tests included).
# Extra arguments go to pytest. pytest's exit code 5 ("no tests collected") is reported and treated as success.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PYSPARK_PYTHON="$PWD/.venv/bin/python" PYSPARK_DRIVER_PYTHON="$PWD/.venv/bin/python"
export SPARK_LOCAL_IP=127.0.0.1 MPLBACKEND=Agg
set +e
.venv/bin/python -m pytest -q -p no:cacheprovider "$@"
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "run-tests: pytest collected no tests (exit code 5)" >&2
  rc=0
fi
exit "$rc"
