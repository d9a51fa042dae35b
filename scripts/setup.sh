#!/usr/bin/env bash
# Install what brokerlb needs on a Debian machine where we are root, skipping what is present:
# OpenJDK (Spark, ZooKeeper), Debian's zookeeper and postgresql (the tests start their own servers),
# uv, and the Python environment (.venv) from uv.lock.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

need=()
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip python3-venv)
if [ "${BROKERLB_BROWSER_TESTS:-1}" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  need+=(chromium)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: apt-get install ${need[*]}" >&2
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

export PATH="$HOME/.local/bin:$PATH"
if ! command -v uv >/dev/null 2>&1; then
  echo "setup: installing uv" >&2
  python3 -m pip --version >/dev/null 2>&1 || { apt-get update -qq; apt-get install -y -qq python3-pip >/dev/null; }
  python3 -m pip install -q uv 2>/dev/null || python3 -m pip install -q --break-system-packages uv
fi

export UV_PYTHON_DOWNLOADS=never
uv sync --frozen --all-extras --group dev --quiet
