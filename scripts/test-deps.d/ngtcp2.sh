#!/usr/bin/env bash
# Debian's ngtcp2 example client and server (gtlsclient, gtlsserver; ngtcp2 0.12 on bookworm), for
# tests/jobs/test_qlog_stacks.py and tests/lab (a second real QUIC stack, and the lab's arms).
# Idempotent: does nothing when both are installed. The package enables an `ngtcp2d` systemd unit;
# nothing starts it where there is no systemd, and the tests start their own servers on 127.0.0.1.
set -euo pipefail
if command -v gtlsclient >/dev/null 2>&1 && { command -v gtlsserver >/dev/null 2>&1 || [ -x /usr/sbin/gtlsserver ]; }; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends ngtcp2-client ngtcp2-server
