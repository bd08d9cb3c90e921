#!/usr/bin/env bash
# Installs what Lumen needs on a Debian 12 machine and is a no-op when it is all there:
# the Debian -dev packages it builds against, a Python venv with the reference tools the tests
# compare against, and the models (scripts/fetch_models.py).
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(cmake ninja-build pkg-config g++ clang libclang-rt-14-dev python3-venv python3-dev
  nlohmann-json3-dev libcpp-httplib-dev libpcre2-dev libxxhash-dev libgtest-dev libgmock-dev
  libbenchmark-dev libcli11-dev libfmt-dev libedit-dev libutf8proc-dev ccache
  libcurl4-openssl-dev libzip-dev libssl-dev  # lumen pull: HTTPS download, wheel unpacking, sha256
  chromium chromium-driver  # the chat page's browser test (tests/e2e/test_web_ui.py)
  libcairo2-dev  # lumen bench profile: the roofline PNG
  haproxy  # deploy/haproxy: the load balancer in front of replicas (tests/e2e/test_replicas_haproxy.py)
  libzmq3-dev cppzmq-dev  # src/kv_transfer: K/V between prefill and decode instances (ZeroMQ)
  libopenmpi-dev openmpi-bin)  # src/dist: MPI collectives, tested under mpirun
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
# python3-venv and python3-dev (the headers `pip install .` builds the Python module against) are
# Debian's; a machine whose python3 already makes venvs and has its headers does not need them.
python_has_all() {
  python3 -c 'import ensurepip, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null
}
only_python=1
for pkg in "${missing[@]}"; do
  case "$pkg" in python3-venv | python3-dev) ;; *) only_python=0 ;; esac
done
if [ "${#missing[@]}" -gt 0 ] && { [ "$only_python" -eq 0 ] || ! python_has_all; }; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

LUMEN_HOME="${LUMEN_HOME:-$HOME/.cache/lumen}"
VENV="$LUMEN_HOME/venv"
if [ ! -x "$VENV/bin/python" ]; then
  echo "setup: creating $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import gguf, numpy, pytest, openai, jsonschema, selenium, kubernetes_validate" 2>/dev/null; then
  echo "setup: installing Python test requirements"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -r scripts/requirements-test.txt
fi

"$VENV/bin/python" scripts/fetch_models.py
# Copies of the default model with rope scaling in their metadata (the rope-scaling goldens).
"$VENV/bin/python" scripts/make_rope_variants.py
