#!/usr/bin/env bash
# Install Debian's headless-capable Chromium (/usr/bin/chromium) for tests/integration/test_html_report.py.
# Recommended packages (fonts-liberation) come along so that text renders.
# Idempotent: does nothing when the browser is already there. Needs root (or passwordless sudo).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  echo "browser-setup: $(/usr/bin/chromium --version 2>/dev/null || echo chromium) already installed"
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo -n"; else
    echo "browser-setup: need root to apt-get install chromium" >&2; exit 1; fi
fi
command -v apt-get >/dev/null 2>&1 || { echo "browser-setup: no apt-get; install chromium by hand" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium >/dev/null
[ -x /usr/bin/chromium ] || { echo "browser-setup: /usr/bin/chromium still missing" >&2; exit 1; }
echo "browser-setup: installed $(/usr/bin/chromium --version 2>/dev/null)"
