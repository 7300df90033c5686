#!/usr/bin/env bash
# Build the libFuzzer harnesses of tests/fuzz with clang and run each for
# SECONDS (docs/testing.md).  Exits 1 when any harness finds a crash, a
# leak, a timeout or an out-of-memory input (saved under
# BUILD/fuzz/findings/TARGET/), 2 on a usage or build error.
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]   (default 60 s, every target)
# Environment: HETPLAN_FUZZ_BUILD (build folder, default build-fuzz),
# HETPLAN_FUZZ_ARGS (more libFuzzer options, e.g. -jobs=2).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

usage() { echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2; }
secs=60
if [ $# -gt 0 ]; then
    case $1 in
        -h|--help) usage ;;
        *[!0-9]*|'') usage ;;
        *) secs=$1; shift ;;
    esac
fi
[ "$secs" -gt 0 ] || usage
command -v clang >/dev/null || { echo "fuzz: clang not found (scripts/install-deps.sh installs it)" >&2; exit 2; }

build=${HETPLAN_FUZZ_BUILD:-build-fuzz}
case $build in /*) ;; *) build=$root/$build ;; esac
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DHETPLAN_FUZZ=ON -DHETPLAN_CUDA=OFF \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log" >&2; exit 2; }
cmake --build "$build" -j2 --target hetplan-fuzzers >/dev/null ||
    { echo "fuzz: build failed (cmake --build $build --target hetplan-fuzzers)" >&2; exit 2; }

fz=$build/fuzz
wanted=" $* "
[ $# -gt 0 ] || wanted=""
# user + system CPU seconds of the children this shell waited for: times
# (a builtin) writes them to a file, since in a command substitution it
# would time the subshell; seconds_in reads its second line back
seconds_in() { tail -1 "$1" | awk '{ s = 0; for (i = 1; i <= NF; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } printf "%.1f", s }'; }

found=0 ran=0
mkdir -p "$fz"
times >"$fz/cpu.start"
printf '%-12s %10s %7s %8s  %s\n' target execs cov corpus result
while read -r target exe seeds regress; do
    [ -z "$wanted" ] || [[ $wanted == *" $target "* ]] || continue
    corpus=$fz/corpus/$target findings=$fz/findings/$target log=$fz/logs/$target.log
    mkdir -p "$corpus" "$findings" "$fz/logs"
    dirs=("$corpus" "$seeds")
    [ -d "$regress" ] && dirs+=("$regress")
    # a target's own dictionary (tests/fuzz/TARGET.dict), else JSON's
    dict=$root/tests/fuzz/$target.dict
    [ -f "$dict" ] || dict=$root/tests/fuzz/json.dict
    # new inputs go to the first folder, the working corpus
    # shellcheck disable=SC2086
    "$exe" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
        -dict="$dict" -artifact_prefix="$findings/" \
        -print_final_stats=1 ${HETPLAN_FUZZ_ARGS:-} "${dirs[@]}" </dev/null >"$log" 2>&1
    rc=$?
    ran=$((ran + 1))
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    result=ok
    if [ "$rc" -ne 0 ]; then
        found=1
        result="FOUND (exit $rc): $(grep -m1 -E 'ERROR:|runtime error|fuzz: ' "$log" | cut -c1-160)"
        result+=$'\n'"             input: $(ls -t "$findings" | head -1 | sed "s|^|$findings/|"), log: $log"
    fi
    printf '%-12s %10s %7s %8s  %s\n' "$target" "${execs:-?}" "${cov:-?}" \
        "$(find "$corpus" -type f | wc -l)" "$result"
done <"$fz/targets"
times >"$fz/cpu.end"
[ "$ran" -gt 0 ] || { echo "fuzz: no such target: $*" >&2; exit 2; }
echo "fuzz: $ran targets, ${secs} s each, $(awk -v a="$(seconds_in "$fz/cpu.start")" -v b="$(seconds_in "$fz/cpu.end")" 'BEGIN { printf "%.1f", b - a }') CPU seconds in total"
if [ "$found" -ne 0 ]; then
    echo "fuzz: findings above; replay one with BUILD/fuzz/fuzz-HARNESS FILE, keep it in tests/fuzz/regress/TARGET/ once fixed" >&2
    exit 1
fi
echo "fuzz: no finding"
