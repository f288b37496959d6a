#!/usr/bin/env bash
# `make check-install`: build the sdist and wheel (python -m build, which fails on a
# deprecation warning from the build backend here), install the wheel into a fresh
# virtual environment and run .ci/smoke.py from outside the checkout; then replace it
# with `pip install .` from the checkout and run the smoke test again.
# Usage: check_install.sh PYTHON_WITH_BUILD BASE_PYTHON
set -euo pipefail
cd "$(dirname "$0")/.."
checkout=$(pwd)
build_python=$1
base_python=${2:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/newtonad-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT

echo "== building sdist and wheel"
"$build_python" -m build --outdir "$work/dist" . > "$work/build.log" 2>&1 \
    || { cat "$work/build.log"; exit 1; }
if grep -n -E "DeprecationWarning|is deprecated|BuildBackendWarning" "$work/build.log"; then
    echo "check-install: the build emitted the deprecation warnings above" >&2
    exit 1
fi
ls "$work/dist"

echo "== wheel in a fresh virtual environment"
"$base_python" -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install --quiet "$work"/dist/newtonad-*.whl
# a cache of its own: the smoke test compiles its kernels the way a new user's first run does
(cd "$work" && NEWTONAD_CACHE_DIR="$work/cache" "$py" "$checkout/.ci/smoke.py" "$checkout")

echo "== pip install . (not editable) in the same environment"
"$py" -m pip uninstall --quiet --yes newtonad
rm -rf "$checkout/build"  # setuptools' build directory: stale files there would be packaged
"$py" -m pip install --quiet "$checkout"
rm -rf "$checkout/build"
(cd "$work" && NEWTONAD_CACHE_DIR="$work/cache" "$py" "$checkout/.ci/smoke.py" "$checkout")
echo "check-install: passed"
