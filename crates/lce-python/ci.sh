#!/usr/bin/env bash
# Builds and tests the Python package `lce` the way a user installs it:
# a fresh virtual environment under target/, `pip install crates/lce-python`
# (maturin, the PEP 517 backend, builds the extension module), then the
# pytest suite. The hypothesis property compares with the CLI, so the `lce`
# binary is built first (debug). Exits non-zero on any failure.
#
#   bash crates/lce-python/ci.sh [PYTEST ARGS...]
#
# PIP_FIND_LINKS (local wheels) and the usual pip variables are honoured.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
venv=$root/target/lce-python-venv

cargo build --quiet --locked -p lce-cli

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
py=$venv/bin/python
"$py" -m pip install --quiet --disable-pip-version-check "maturin>=1.9.4,<2" "pytest>=8" "hypothesis>=6"
# The package as a user installs it (an isolated build with maturin).
"$py" -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps "$root/crates/lce-python"

export LCE_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/lce
cd "$root/crates/lce-python"
"$py" -m pytest -q "$@"
