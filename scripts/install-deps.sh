#!/bin/sh
# Install hetplan's build and test dependencies from Debian packages.
set -eu
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config libglpk-dev libcjson-dev check >/dev/null
# Report and man-page tests: headless Chromium renders the SVG report
# (DejaVu for its text), zlib decodes the PNG screenshot, groff checks
# docs/planner.1; the tests skip with a message when these are absent.
$SUDO apt-get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core zlib1g-dev groff-base >/dev/null
# Fuzzing (scripts/fuzz.sh, docs/testing.md): clang with libFuzzer and the
# sanitizer runtimes.
$SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
# CI's memory check of the command-line tests (.ci/run, docs/testing.md).
$SUDO apt-get install -y -qq --no-install-recommends valgrind >/dev/null
echo "hetplan dependencies installed"
