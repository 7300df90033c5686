#!/bin/sh
# Install hetplan's build and test dependencies from Debian packages.
set -eu
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# When another apt or dpkg holds its lock (an unattended upgrade, a second
# install), wait for it, at most APT_WAIT seconds in all: apt-get waits for
# dpkg's lock itself (DPkg::Lock::Timeout), and a lock it does not wait
# for (apt-get update's lists) is tried again every 10 s until then.
APT_WAIT=600
apt_err=$(mktemp)
trap 'rm -f "$apt_err" "$apt_err.rc"' EXIT
apt_get() {
    start=$(date +%s)
    while :; do
        # apt's stderr shown and kept, its status in $apt_err.rc
        { rc=0
          $SUDO apt-get -o DPkg::Lock::Timeout="$APT_WAIT" "$@" 2>&1 1>&3 3>&- || rc=$?
          echo "$rc" >"$apt_err.rc"; } 3>&1 | tee "$apt_err" >&2
        rc=$(cat "$apt_err.rc")
        if [ "$rc" = 0 ]; then
            return 0
        fi
        if grep -q "Could not get lock" "$apt_err" &&
            [ $(($(date +%s) - start)) -lt "$APT_WAIT" ]; then
            echo "install-deps: another apt or dpkg holds its lock: trying again" \
                "in 10 s (at most $APT_WAIT s in all)" >&2
            sleep 10
            continue
        fi
        return "$rc"
    done
}
apt_get update -qq
apt_get install -y -qq --no-install-recommends \
    build-essential cmake pkg-config libglpk-dev libcjson-dev check >/dev/null
# Report, man-page and progress tests: headless Chromium renders the SVG
# report (DejaVu for its text), zlib decodes the PNG screenshot, groff
# checks docs/planner.1, script(1) gives the planner a terminal; ctest
# reports those checks as skipped when these are absent.
apt_get install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core zlib1g-dev groff-base bsdutils >/dev/null
# Fuzzing (scripts/fuzz.sh, docs/testing.md): clang with libFuzzer and the
# sanitizer runtimes.
apt_get install -y -qq --no-install-recommends clang libclang-rt-14-dev >/dev/null
# CI's memory check of the command-line tests (.ci/run, docs/testing.md).
apt_get install -y -qq --no-install-recommends valgrind >/dev/null
# The exports checked by the launchers' own code (tests/upstream, docs/testing.md):
# PyTorch 1.13 on CPU runs Megatron-LM's and DeepSpeed's sources from
# ../shared/upstream-src and is torchrun's parser; the rest are what those
# sources import.  DeepSpeed's config also needs pydantic 2, which Debian
# 12 lacks: the checks take it from python3 on PATH when it has it.
apt_get install -y -qq --no-install-recommends python3 python3-torch \
    python3-numpy python3-packaging python3-yaml python3-regex python3-cpuinfo \
    python3-tqdm python3-psutil python3-msgpack >/dev/null
echo "hetplan dependencies installed"
