#!/usr/bin/env bash
# Installs the Debian packages that building and running `lumen` needs, and nothing else (no test
# tools, no browser, no MPI, no Python venv): what the quick start (scripts/run.sh) waits for on a
# fresh machine. A no-op when they are all there. scripts/setup.sh adds what the tests need.
set -euo pipefail

BUILD_PACKAGES=(cmake ninja-build pkg-config g++ ccache
  nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev libxxhash-dev libcli11-dev libfmt-dev
  libedit-dev libutf8proc-dev
  libcurl4-openssl-dev libzip-dev libssl-dev  # lumen pull: HTTPS download, wheel unpacking, sha256
  libcairo2-dev  # lumen bench profile: the roofline PNG
  libpng-dev libjpeg62-turbo-dev libwebp-dev libgif-dev zlib1g-dev  # src/image: image input for VLMs
  libzmq3-dev cppzmq-dev)  # src/kv_transfer: K/V between prefill and decode instances (ZeroMQ)

# Recommended packages are left out here (the quick start's time); scripts/setup.sh takes them.
APT_OPTIONS=(--no-install-recommends)
# install_missing PACKAGE...: apt-get installs those not installed yet (as root, or with sudo).
install_missing() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}" >&2
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_OPTIONS[@]}" "${missing[@]}" >&2
}

# Sourced by scripts/setup.sh for install_missing; run, it installs the build packages.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  install_missing "${BUILD_PACKAGES[@]}"
fi
