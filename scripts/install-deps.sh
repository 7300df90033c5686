#!/bin/sh
# Install hetplan's build and test dependencies from Debian packages.
set -eu
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config libglpk-dev libcjson-dev check >/dev/null
echo "hetplan dependencies installed"
