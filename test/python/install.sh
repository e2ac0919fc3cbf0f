#!/usr/bin/env bash
# install.sh VENV BUILD_DIR: installs the cleave package from this checkout
# into the virtual environment VENV (created over Debian's site packages, as
# docs/user/python.md says), building from BUILD_DIR.
set -euo pipefail
venv=$(realpath -m "$1")
export CLEAVE_BUILD_DIR=$(realpath -m "$2")
if [ ! -x "$venv/bin/pip" ]; then
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check .
# The installed package, not the source tree: run from elsewhere.
cd /
"$venv/bin/python" -c 'import cleave, sys; print("installed", cleave.__file__)'
