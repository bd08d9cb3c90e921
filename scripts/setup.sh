#!/usr/bin/env bash
# Installs what Lumen needs on a Debian 12 machine and is a no-op when it is all there:
# the Debian -dev packages it builds against, a Python venv with the reference tools the tests
# compare against, and the models (scripts/fetch_models.py).
set -euo pipefail
cd "$(dirname "$0")/.."

# The packages `lumen` builds against (scripts/setup_build.sh, also the quick start's), then what
# the tests need on top.
source scripts/setup_build.sh
TEST_PACKAGES=(clang libclang-rt-14-dev python3-venv python3-dev libgtest-dev libgmock-dev libbenchmark-dev
  chromium chromium-driver  # the chat page's browser tests (tests/e2e/test_web_ui*.py)
  haproxy  # deploy/haproxy: the load balancer in front of replicas (tests/e2e/test_replicas_haproxy.py)
  libopenmpi-dev openmpi-bin)  # src/dist: MPI collectives, tested under mpirun
APT_OPTIONS=()  # as Debian recommends: the test tools' extras (Chromium's fonts and the like)
install_missing "${BUILD_PACKAGES[@]}"
# python3-venv and python3-dev (the headers `pip install .` builds the Python module against) are
# Debian's; a machine whose python3 already makes venvs and has its headers does not need them.
python_has_all() {
  python3 -c 'import ensurepip, os, sysconfig; assert os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h"))' 2>/dev/null
}
wanted=()
for pkg in "${TEST_PACKAGES[@]}"; do
  case "$pkg" in python3-venv | python3-dev) python_has_all || wanted+=("$pkg") ;; *) wanted+=("$pkg") ;; esac
done
install_missing "${wanted[@]}"

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
