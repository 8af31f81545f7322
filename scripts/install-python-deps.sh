#!/usr/bin/env bash
# Installs the Python packages the tests use when python3 cannot import them: python-osc (a
# second OSC implementation the integration tests drive the router with), jsonschema (checks
# the session files against Sessions/schema.json), websocket-client (the OSCQuery client
# written from the proposal) and selenium (drives Debian's chromium through chromium-driver for
# the control page's tests). Quiet when they are already there.
set -euo pipefail
missing=()
python3 -c 'import pythonosc' 2>/dev/null || missing+=(python-osc)
python3 -c 'import jsonschema' 2>/dev/null || missing+=(jsonschema)
python3 -c 'import websocket' 2>/dev/null || missing+=(websocket-client)
python3 -c 'import selenium' 2>/dev/null || missing+=(selenium)
[ ${#missing[@]} -eq 0 ] && exit 0
if ! python3 -m pip --version >/dev/null 2>&1; then
    scripts/install-deps.sh python3-pip
fi
echo "Installing ${missing[*]} from PyPI for the tests" >&2
# Debian's own python3 refuses user installs without --break-system-packages (PEP 668); a user
# install touches nothing of the system's.
python3 -m pip install --quiet --user "${missing[@]}" 2>/dev/null \
    || python3 -m pip install --quiet --user --break-system-packages "${missing[@]}"
