#!/usr/bin/env bash
# Installs python-osc (a second OSC implementation the integration tests drive the router with)
# when python3 cannot import it. Quiet when it is already there.
set -euo pipefail
python3 -c 'import pythonosc' 2>/dev/null && exit 0
if ! python3 -m pip --version >/dev/null 2>&1; then
    scripts/install-deps.sh python3-pip
fi
echo "Installing python-osc from PyPI for the integration tests" >&2
# Debian's own python3 refuses user installs without --break-system-packages (PEP 668); a user
# install touches nothing of the system's.
python3 -m pip install --quiet --user python-osc 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages python-osc
