#!/usr/bin/env bash
# Create or reuse .venv at the repo root and install EvoKernel with its test tools.
# Also installs bubblewrap (the verifier's sandbox) when it is missing and we may use apt.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing bubblewrap (sandbox for untrusted kernels)..."
    (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null 2>&1 \
      || echo "warning: could not install bubblewrap; the verifier falls back to rlimits-only isolation" >&2
  else
    echo "warning: bubblewrap (bwrap) not found; install it for full isolation (apt-get install bubblewrap)" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
stamp=.venv/.evokernel-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ] || [ setup.py -nt "$stamp" ]; then
  # torch first, pinned: the CPU wheel is on local disk; an unpinned torch pulls a CUDA build
  .venv/bin/python -m pip install -q --disable-pip-version-check "torch==2.13.0"
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  touch "$stamp"
fi
