#!/usr/bin/env bash
# Installs the Python packages the tests use when python3 cannot import them: python-osc (a
# second OSC implementation the integration tests drive the router with), jsonschema (checks
# the session files against Sessions/schema.json), websocket-client (the OSCQuery client
# written from the proposal), python-oscquery (an OSCQuery client library from elsewhere, which
# must parse the namespace), selenium (drives Debian's chromium through chromium-driver for
# the control page's tests), axe-selenium-python (carries axe-core 3.1, which checks the page
# against WCAG 2.1 A and AA) and, without its dependencies, axe-playwright-python (only for the
# axe-core 4 it carries: the page is checked by both). Quiet when they are already there.
set -euo pipefail
missing=()
python3 -c 'import pythonosc' 2>/dev/null || missing+=(python-osc)
python3 -c 'import jsonschema' 2>/dev/null || missing+=(jsonschema)
python3 -c 'import websocket' 2>/dev/null || missing+=(websocket-client)
python3 -c 'import pythonoscquery' 2>/dev/null || missing+=(python-oscquery==0.4.0)
python3 -c 'import selenium' 2>/dev/null || missing+=(selenium)
python3 -c 'import axe_selenium_python' 2>/dev/null || missing+=(axe-selenium-python)
without_dependencies=()
python3 -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("axe_playwright_python") is None)' 2>/dev/null \
    || without_dependencies+=(axe-playwright-python)
[ ${#missing[@]} -eq 0 ] && [ ${#without_dependencies[@]} -eq 0 ] && exit 0
if ! python3 -m pip --version >/dev/null 2>&1; then
    scripts/install-deps.sh python3-pip
fi
echo "Installing ${missing[*]} ${without_dependencies[*]} from PyPI for the tests" >&2
# Debian's own python3 refuses user installs without --break-system-packages (PEP 668); a user
# install touches nothing of the system's.
install() {
    python3 -m pip install --quiet --user "$@" 2>/dev/null || python3 -m pip install --quiet --user --break-system-packages "$@"
}
[ ${#missing[@]} -eq 0 ] || install "${missing[@]}"
[ ${#without_dependencies[@]} -eq 0 ] || install --no-deps "${without_dependencies[@]}"
