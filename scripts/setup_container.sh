#!/usr/bin/env bash
# Installs what building and running the container image needs (deploy/container, the `slow`
# test tests/container/test_container_image.py): podman, runc (crun, podman's default runtime,
# refuses hosts with cgroup v1 and v2 mounted together, as this project's machines have), and
# mmdebstrap (the Debian 12 base image is made from Debian's packages: no registry is reached).
# A no-op when they are all there.
set -euo pipefail
source "$(dirname "$0")/setup_build.sh"  # install_missing
install_missing podman runc mmdebstrap uidmap
