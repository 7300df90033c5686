#!/usr/bin/env bash
# Capture the planner's behaviour on the shipped examples, or compare two
# captures, so that a refactoring can be checked to change no output.
#
#   tools/compare-outputs.sh capture PLANNER OUTDIR
#       Runs PLANNER (path to the planner binary) through every command over
#       the examples in <repo>/examples (and AMP's runs in
#       <repo>/../shared/data/amp when present). Per run NAME, OUTDIR gets
#       NAME.cmd (the command line), NAME.out, NAME.err, NAME.rc and, when
#       the run wrote files, NAME.files/ plus NAME.files.list (type and mode
#       of each file). OUTDIR must not exist or be empty.
#   tools/compare-outputs.sh diff DIR_A DIR_B
#       diff -r of two captures: exit 0 when identical, 1 with a summary
#       otherwise.
#
# Outputs are normalised so that only behaviour is compared:
#   - search wall times ("elapsed_s", "best_at_s" in plan JSON, the seconds
#     of the --verbose statistics lines) become <time>; predicted times stay;
#   - the pid in temporary file names (FILE.tmp.PID in write errors) becomes
#     <pid>;
#   - absolute paths of the work dir, the repo, the shared data and the
#     planner binary become <WORK>, <REPO>, <DATA>, <PLANNER>.
# Nothing else varies between two captures of one binary: the DT-FM
# searches run with a fixed --seed and stop on --evals or --stall, never on
# their wall-clock limit.
# Runs use relative paths from a private work dir holding a copy of the
# examples, so plans record 'examples/...' and stay comparable.
set -euo pipefail

usage() {
    echo "usage: $0 capture PLANNER OUTDIR" >&2
    echo "       $0 diff DIR_A DIR_B" >&2
    exit 2
}

die() {
    echo "compare-outputs: $*" >&2
    exit 2
}

# The repo is the parent of this script's folder; shared data sits beside it.
TOOLS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
REPO=$(cd "$TOOLS_DIR/.." && pwd -P)
DATA="$REPO/../shared/data"
RUN_TIMEOUT=300 # seconds per planner run

# ---------------------------------------------------------------- diff

cmd_diff() {
    local a=$1 b=$2 out rc=0
    [[ -d $a ]] || die "'$a' is not a directory"
    [[ -d $b ]] || die "'$b' is not a directory"
    out=$(diff -r -q "$a" "$b") || rc=$?
    if [[ $rc -eq 0 ]]; then
        echo "identical: $(find "$a" -name '*.rc' | wc -l) runs"
        return 0
    fi
    [[ $rc -eq 1 ]] || die "diff failed (exit $rc)"
    echo "$out"
    echo
    diff -r "$a" "$b" | head -n 200 || true
    echo
    echo "summary: $(grep -c '^Files .* differ$' <<<"$out" || true) file(s) differ," \
         "$(grep -c '^Only in ' <<<"$out" || true) only on one side"
    return 1
}

# ---------------------------------------------------------------- capture

# run NAME ARG... : run the planner from the work dir; '@O' in an argument
# stands for the run's own output folder (o/NAME).
run() {
    local name=$1 od a rc=0
    shift
    [[ $name =~ ^[A-Za-z0-9._-]+$ ]] || die "bad run name '$name'"
    [[ ! -e $OUT/$name.rc ]] || die "duplicate run name '$name'"
    od="o/$name"
    local args=()
    for a in "$@"; do args+=("${a//@O/$od}"); done
    mkdir -p "$od"
    { printf 'planner'; printf ' %q' "${args[@]}"; printf '\n'; } >"$OUT/$name.cmd"
    # a hung run is killed and recorded with exit code 124
    timeout "$RUN_TIMEOUT" "$PLANNER" "${args[@]}" >"$OUT/$name.out" 2>"$OUT/$name.err" \
        </dev/null || rc=$?
    echo "$rc" >"$OUT/$name.rc"
    if [[ -n $(ls -A "$od") ]]; then
        cp -R "$od" "$OUT/$name.files"
        (cd "$od" && find . -mindepth 1 -printf '%y %m %P\n' | LC_ALL=C sort) \
            >"$OUT/$name.files.list"
    fi
    NRUNS=$((NRUNS + 1))
}

# Inputs made up here: small enough to read, each exercising one feature.
write_inputs() {
    mkdir -p in
    # calibration trials on amp-het/gpt2-amp, with made-up measurements
    cat >in/trials.json <<'EOF'
{
  "strategies": [
    {"tp": 1, "dp": 4, "pp": 4, "mbs": 1, "stage_boundaries": [0, 7, 14, 20, 30], "measured_s": 1.10},
    {"tp": 1, "dp": 2, "pp": 8, "mbs": 1, "stage_boundaries": [0, 5, 9, 12, 15, 18, 21, 24, 30], "measured_s": 0.95},
    {"tp": 2, "dp": 2, "pp": 4, "mbs": 4, "stage_boundaries": [0, 8, 14, 20, 30], "measured_s": null},
    {"tp": 1, "dp": 16, "pp": 1, "mbs": 1, "stage_boundaries": [0, 30], "measured_s": 2.4},
    {"tp": 2, "dp": 1, "pp": 8, "mbs": 1, "stage_boundaries": [0, 5, 9, 13, 17, 21, 25, 28, 30], "measured_s": 0.81},
    {"tp": 4, "dp": 1, "pp": 4, "mbs": 2, "stage_boundaries": [0, 8, 15, 22, 30], "measured_s": 1.35}
  ]
}
EOF
    cat >in/trials-none.json <<'EOF'
{"strategies": [{"tp": 1, "dp": 16, "pp": 1, "mbs": 1, "stage_boundaries": [0, 30], "measured_s": null}]}
EOF
    # explicit rank placement and GPipe in a strategies file
    cat >in/strategies-ranks.json <<'EOF'
{"strategies": [
  {"tp": 2, "dp": 1, "pp": 8, "mbs": 1, "stage_boundaries": [0, 5, 9, 13, 17, 21, 25, 28, 30],
   "ranks": [12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]},
  {"tp": 1, "dp": 4, "pp": 4, "mbs": 2, "stage_boundaries": [0, 8, 15, 22, 30], "schedule": "gpipe"}
]}
EOF
    echo '{"format": "hetplan-profile/1", "entries": []}' >in/profile-empty.json
    cat >in/profile-kinds.json <<'EOF'
{"format": "hetplan-profile/1", "model": "gpt2-amp", "entries": [
  {"device": "V100", "tp": 1, "mbs": 1, "by_kind": {"transformer": {"fwd_ms": 1.6, "bwd_ms": 3.3}}},
  {"device": "V100", "tp": 2, "mbs": 1, "by_kind": {"transformer": {"fwd_ms": 0.9}}},
  {"device": "T4", "tp": 1, "mbs": 1, "by_kind": {"transformer": {"fwd_ms": 4.9}, "head": {"fwd_ms": 2.5}}}
]}
EOF
    echo '{"total_epochs": 10, "epochs": [{"epoch": 0, "frozen": 0}, {"epoch": 3, "frozen": 8}, {"epoch": 6, "frozen": 20}]}' \
        >in/freeze.json
    echo '{"total_epochs": 4, "epochs": [{"epoch": 0, "frozen": "x"}]}' >in/freeze-bad.json
    # decentralized clusters small enough for the exact searcher
    cat >in/dtfm-small.json <<'EOF'
{
  "name": "dtfm-small",
  "device": "V100",
  "regions": [{"name": "A", "gpus": 4}, {"name": "B", "gpus": 4}, {"name": "C", "gpus": 4, "device": "T4"}],
  "inside": {"latency_ms": 1, "bandwidth_gbps": 10},
  "between": {"latency_ms": 40, "bandwidth_gbps": 1},
  "region_pairs": [{"a": "A", "b": "C", "latency_ms": 80, "bandwidth_gbps": 0.5,
                    "reverse": {"latency_ms": 90, "bandwidth_gbps": 0.4}}],
  "workload": {"d_pp": 3}
}
EOF
    cat >in/dtfm-matrix.json <<'EOF'
{
  "name": "dtfm-matrix",
  "device_types": ["V100", "V100", "T4", "T4"],
  "latency_ms": [[null, 1, 30, 40], [1, null, 35, 45], [30, 35, null, 2], [40, 45, 2, null]],
  "bandwidth_gbps": [[null, 10, 1, 0.8], [10, null, 1.2, 0.9], [1, 1.2, null, 5], [0.8, 0.9, 5, null]],
  "workload": {"d_pp": 2, "c_pp_bytes": 1e8, "c_dp_bytes": 2e8}
}
EOF
    # broken inputs
    echo '{"name": "broken", "nodes": [' >in/bad-syntax.json
    echo '{"name": "bad", "nodes": [{"name": "n", "device": "V100", "gpus": -4}]}' >in/bad-cluster.json
    echo '{"name": "bad", "transformer": {"family": "gpt2", "layers": 0, "hidden": 1024}}' >in/bad-model.json
    echo '{"strategies": [{"tp": 3, "dp": 1, "pp": 1, "mbs": 1, "stage_boundaries": [0, 30]}]}' \
        >in/bad-strategies.json
    echo '{"schema": "hetplan-plan/1"}' >in/bad-plan.json
    echo '{"name": "r", "regions": [{"name": "a", "gpus": 2}], "region_pairs": [{"a": "a", "b": "c", "latency_ms": 1, "bandwidth_gbps": 1}]}' \
        >in/bad-dtfm.json
}

# Help texts, version, and command lines the planner must refuse.
capture_help_and_errors() {
    local c
    run help --help
    run help-short -h
    run version --version
    run no-args
    for c in plan evaluate calibrate decentralized whatif replan export report; do
        run "help-$c" "$c" --help
    done
    run help-after-bad-option --top-k 0 --help
    run err-unknown-command frobnicate
    run err-unknown-option --cluster examples/amp-het.json --model examples/gpt2-amp.json --bogus
    run err-missing-cluster --model examples/gpt2-amp.json
    run err-missing-model --cluster examples/amp-het.json
    run err-missing-value --cluster examples/amp-het.json --model
    run err-no-such-file --cluster examples/nope.json --model examples/gpt2-amp.json
    run err-bad-syntax --cluster in/bad-syntax.json --model examples/gpt2-amp.json
    run err-bad-cluster --cluster in/bad-cluster.json --model examples/gpt2-amp.json
    run err-bad-model --cluster examples/amp-het.json --model in/bad-model.json
    run err-top-k-0 --cluster examples/amp-het.json --model examples/gpt2-amp.json --top-k 0
    run err-top-k-eq --cluster examples/amp-het.json --model examples/gpt2-amp.json --top-k=3
    run err-zero-5 --cluster examples/amp-het.json --model examples/gpt2-amp.json --zero 5
    run err-precision --cluster examples/amp-het.json --model examples/gpt2-amp.json --precision int8
    run err-format --cluster examples/amp-het.json --model examples/gpt2-amp.json --format xml
    run err-method --cluster examples/amp-het.json --model examples/gpt2-amp.json --method best
    run err-param-name --cluster examples/amp-het.json --model examples/gpt2-amp.json --param bogus=1
    run err-param-range --cluster examples/amp-het.json --model examples/gpt2-amp.json --param net_eff=2
    run err-param-value --cluster examples/amp-het.json --model examples/gpt2-amp.json --param net_eff=abc
    run err-two-profiles --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile in/profile-empty.json --amp-profile in/profile-empty.json
    run err-plan-strategies --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies examples/strategies-amp-het.json
    run err-command-late --cluster examples/amp-het.json evaluate
    run err-output-dir-missing --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --output @O/no/such/dir/plan.json
    run err-output-is-dir --cluster examples/amp-het.json --model examples/gpt2-amp.json --output @O
    run err-no-fit --cluster examples/amp-homogeneous.json --model examples/llama-7b.json
    run err-no-fit-json --cluster examples/amp-het.json --model examples/llama-7b.json --format json
    run err-eval-no-strategies evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json
    run err-eval-bad-strategies evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies in/bad-strategies.json
    run err-eval-gpu-count evaluate --cluster examples/h100-node4.json --model examples/gpt2-amp.json \
        --strategies examples/strategies-amp-het.json
    run err-eval-top-k evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies examples/strategies-amp-het.json --top-k 3
}

capture_plan() {
    local c m base
    local clusters=(amp-het amp-homogeneous h100-node4 mixed-generations)
    local models=(gpt2-345m gpt2-amp gpt3-xl llama-7b)
    # every cluster with every model: table, JSON, and the plan file
    for c in "${clusters[@]}"; do
        for m in "${models[@]}"; do
            base=(--cluster "examples/$c.json" --model "examples/$m.json")
            run "plan-$c-$m" "${base[@]}"
            run "plan-$c-$m-json" "${base[@]}" --format json
            run "plan-$c-$m-output" plan "${base[@]}" --output @O/plan.json --top-k 8
        done
    done
    # search and cost-model options, on three pairs
    for c in amp-het:gpt2-amp h100-node4:llama-7b mixed-generations:gpt3-xl; do
        m=${c#*:}
        c=${c%:*}
        base=(--cluster "examples/$c.json" --model "examples/$m.json" --format json)
        run "plan-$c-$m-megatron" "${base[@]}" --method megatron
        run "plan-$c-$m-megatron-table" "${base[@]}" --method megatron --format table
        run "plan-$c-$m-simulate" "${base[@]}" --fidelity simulate
        run "plan-$c-$m-simulate-table" "${base[@]}" --fidelity simulate --format table
        run "plan-$c-$m-simulate-megatron" "${base[@]}" --fidelity simulate --method megatron
        run "plan-$c-$m-zero1" "${base[@]}" --zero 1
        run "plan-$c-$m-zero2" "${base[@]}" --zero 2
        run "plan-$c-$m-zero3" "${base[@]}" --zero 3
        run "plan-$c-$m-recompute" "${base[@]}" --recompute
        run "plan-$c-$m-zero3-recompute" "${base[@]}" --zero 3 --recompute --format table
        run "plan-$c-$m-fp16" "${base[@]}" --precision fp16
        run "plan-$c-$m-bf16" "${base[@]}" --precision bf16
        run "plan-$c-$m-fp32" "${base[@]}" --precision fp32
        run "plan-$c-$m-gpipe" "${base[@]}" --schedule gpipe
        run "plan-$c-$m-place-megatron" "${base[@]}" --placement megatron
        run "plan-$c-$m-place-fastest" "${base[@]}" --placement fastest-first
        run "plan-$c-$m-max-tp1" "${base[@]}" --max-tp 1
        run "plan-$c-$m-max-mbs1" "${base[@]}" --max-mbs 1
        run "plan-$c-$m-top1" "${base[@]}" --top-k 1 --format table
        run "plan-$c-$m-top50" "${base[@]}" --top-k 50 --format table
        run "plan-$c-$m-gbs" "${base[@]}" --global-batch 64
        run "plan-$c-$m-params" "${base[@]}" --param net_eff=0.8 --param compute_eff=0.4 \
            --param zero_stage=1 --zero 2
        run "plan-$c-$m-verbose" "${base[@]}" --verbose --format table
        run "plan-$c-$m-quiet" "${base[@]}" --quiet --output @O/plan.json
    done
    base=(--cluster examples/amp-het.json --model examples/gpt2-amp.json)
    run plan-profile-empty "${base[@]}" --profile in/profile-empty.json --format json
    run plan-profile-kinds "${base[@]}" --profile in/profile-kinds.json --format json
    run plan-profile-kinds-table "${base[@]}" --profile in/profile-kinds.json
    run plan-last-option-wins "${base[@]}" --top-k 2 --top-k 3 -o @O/a.json -o @O/b.json
    # absolute paths end up in the outputs as placeholders
    run plan-absolute-paths --cluster "$WORK/examples/amp-het.json" \
        --model "$WORK/examples/gpt2-amp.json" --output "$WORK/@O/plan.json" --top-k 2
    run err-absolute-missing --cluster "$REPO/examples/missing.json" --model examples/gpt2-amp.json
}

capture_evaluate() {
    local base
    base=(evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json
          --strategies examples/strategies-amp-het.json)
    run eval-amp-het "${base[@]}"
    run eval-amp-het-json "${base[@]}" --format json
    run eval-amp-het-output "${base[@]}" --output @O/eval.json --quiet
    run eval-amp-het-simulate "${base[@]}" --fidelity simulate --format json
    run eval-amp-het-gpipe "${base[@]}" --schedule gpipe
    run eval-amp-het-zero2-recompute "${base[@]}" --zero 2 --recompute
    run eval-amp-het-fp32 "${base[@]}" --precision fp32
    run eval-amp-het-gbs "${base[@]}" --global-batch 64
    run eval-amp-het-param "${base[@]}" --param net_eff=0.9
    run eval-amp-het-profile "${base[@]}" --profile in/profile-kinds.json
    run eval-amp-homogeneous evaluate --cluster examples/amp-homogeneous.json \
        --model examples/gpt2-amp.json --strategies examples/strategies-amp-het.json --format json
    run eval-ranks evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies in/strategies-ranks.json --format json
    base=(evaluate --cluster examples/h100-node4.json --model examples/gpt2-345m.json
          --strategies examples/strategies-gpt2-pp4.json)
    run eval-h100-pp4 "${base[@]}"
    run eval-h100-pp4-json "${base[@]}" --format json
    run eval-h100-pp4-simulate "${base[@]}" --fidelity simulate
    run eval-h100-pp4-bf16 "${base[@]}" --precision bf16 --format json
}

capture_calibrate() {
    local base
    base=(calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json
          --profile in/profile-kinds.json --trials in/trials.json)
    run cal-small "${base[@]}"
    run cal-small-json "${base[@]}" --format json
    run cal-small-verbose "${base[@]}" --verbose
    run cal-small-output "${base[@]}" --output @O/calibrated.json
    run cal-small-noloo "${base[@]}" --no-loo
    run cal-small-reg0 "${base[@]}" --reg 0 --format json
    run cal-small-param "${base[@]}" --param net_eff=0.7
    run cal-small-gbs "${base[@]}" --global-batch 64 --no-loo
    run cal-empty-profile calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile in/profile-empty.json --trials in/trials.json --format json
    run cal-small-plan --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile o/cal-small-output/calibrated.json --format json
    run cal-small-eval evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies examples/strategies-amp-het.json --profile o/cal-small-output/calibrated.json
    run cal-err-no-profile calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --trials in/trials.json
    run cal-err-no-trials calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile in/profile-empty.json
    run cal-err-none-measured calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile in/profile-empty.json --trials in/trials-none.json
    run cal-err-trials-as-profile calibrate --cluster examples/amp-het.json \
        --model examples/gpt2-amp.json --profile in/trials.json --trials in/trials.json

    if [[ ! -d data/amp ]]; then
        echo "compare-outputs: note: $DATA/amp not found; AMP calibration runs skipped" >&2
        return 0
    fi
    local amp=(--amp-profile data/amp/profiles.json)
    run amp-plan-het --cluster examples/amp-het.json --model examples/gpt2-amp.json "${amp[@]}" \
        --format json
    run amp-plan-homogeneous --cluster examples/amp-homogeneous.json --model examples/gpt2-amp.json \
        --amp-profile data/amp/profiles.json:gpt2
    run amp-plan-bad-key --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --amp-profile data/amp/profiles.json:nokey
    run amp-eval-het evaluate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --strategies examples/strategies-amp-het.json "${amp[@]}"
    run amp-cal-het calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        "${amp[@]}" --amp-trials data/amp/het_cluster.json --output @O/het-calibrated.json
    run amp-cal-homogeneous-json calibrate --cluster examples/amp-homogeneous.json \
        --model examples/gpt2-amp.json "${amp[@]}" --amp-trials data/amp/homogeneous.json \
        --format json --output @O/homogeneous-calibrated.json
    run amp-cal-het-noloo-verbose calibrate --cluster examples/amp-het.json \
        --model examples/gpt2-amp.json "${amp[@]}" --amp-trials data/amp/het_cluster.json \
        --no-loo --verbose
    run amp-plan-het-calibrated --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile o/amp-cal-het/het-calibrated.json --format json
    run amp-plan-het-cross --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        --profile o/amp-cal-homogeneous-json/homogeneous-calibrated.json
    run amp-eval-het-calibrated evaluate --cluster examples/amp-het.json \
        --model examples/gpt2-amp.json --strategies examples/strategies-amp-het.json \
        --profile o/amp-cal-het/het-calibrated.json --format json
    run amp-cal-err-mixed calibrate --cluster examples/amp-het.json --model examples/gpt2-amp.json \
        "${amp[@]}" --amp-trials data/amp/het_cluster.json --trials in/trials.json
}

# The DT-FM searchers stop on a number of evaluations (--evals) or on
# stalls, never on the wall clock: the 60 s default limit is never reached.
capture_decentralized() {
    local f name s
    for f in examples/dtfm-*.json; do
        name=$(basename "$f" .json)
        run "$name" decentralized --cluster "$f" --seed 0 --evals 20000
        run "$name-json" decentralized --cluster "$f" --seed 7 --evals 5000 --format json
        run "$name-output" decentralized --cluster "$f" --seed 1 --evals 5000 \
            --output @O/dtfm-plan.json --verbose
        for s in sa kl random; do
            run "$name-$s" decentralized --cluster "$f" --seed 3 --evals 3000 --searcher "$s" \
                --format json
        done
    done
    f=examples/dtfm-regional.json
    run dtfm-regional-stall decentralized --cluster "$f" --seed 5 --stall 20
    run dtfm-regional-pp4 decentralized --cluster "$f" --seed 0 --evals 5000 --pp 4
    run dtfm-regional-public decentralized --cluster "$f" --seed 0 --evals 5000 \
        --convention public-code --format json
    run dtfm-regional-model decentralized --cluster "$f" --seed 0 --evals 5000 \
        --model examples/gpt3-xl.json --compute --format json
    run dtfm-regional-model-llama decentralized --cluster "$f" --seed 2 --evals 5000 \
        --model examples/llama-7b.json --pp 4
    run dtfm-regional-quiet decentralized --cluster "$f" --seed 0 --evals 1000 --quiet \
        --output @O/dtfm-plan.json
    run dtfm-small-exact decentralized --cluster in/dtfm-small.json --searcher exact
    run dtfm-small-exact-json decentralized --cluster in/dtfm-small.json --searcher exact \
        --compute --format json
    run dtfm-small-ga decentralized --cluster in/dtfm-small.json --seed 4 --evals 2000
    run dtfm-small-err-pp decentralized --cluster in/dtfm-small.json --pp 5 --evals 100
    run dtfm-matrix-exact decentralized --cluster in/dtfm-matrix.json --searcher exact --format json
    run dtfm-matrix-sa decentralized --cluster in/dtfm-matrix.json --searcher sa --seed 9 --evals 500
    run dtfm-err-searcher decentralized --cluster "$f" --searcher nope
    run dtfm-err-exact-large decentralized --cluster "$f" --searcher exact
    run dtfm-err-bad-cluster decentralized --cluster in/bad-dtfm.json
    run dtfm-err-no-cluster decentralized --seed 1
    run dtfm-err-seconds decentralized --cluster "$f" --seconds 0
}

# whatif, replan, export and report read the plans written by capture_plan.
capture_plan_users() {
    local p name t
    local plans=(amp-het-gpt2-amp h100-node4-llama-7b mixed-generations-llama-7b
                 amp-homogeneous-gpt3-xl)
    for name in "${plans[@]}"; do
        p="o/plan-$name-output/plan.json"
        run "whatif-$name" whatif --plan "$p" --slow 0:2
        run "whatif-$name-json" whatif --plan "$p" --slow 1:1.5 --slow 3:3 --format json
        run "whatif-$name-strategy2" whatif --plan "$p" --slow 2:1.25 --strategy 2 \
            --iterations 100 --verbose
        run "replan-$name" replan --plan "$p" --frozen 8 --verbose
        run "replan-$name-json" replan --plan "$p" --frozen 12 --format json
        run "replan-$name-schedule" replan --plan "$p" --schedule in/freeze.json \
            --output @O/replan.json
        run "replan-$name-nocompress" replan --plan "$p" --frozen 16 --no-compress --max-mbs 2
        for t in megatron deepspeed torchrun hostfile; do
            run "export-$name-$t" export --plan "$p" --to "$t"
            run "export-$name-$t-dir" export --plan "$p" --to "$t" --output @O/launch --verbose
            run "export-$name-$t-json" export --plan "$p" --to "$t" --format json \
                --output @O/launch --strategy 2 --master-addr head.example --master-port 31000
        done
    done
    p=o/plan-amp-het-gpt2-amp-output/plan.json
    run whatif-tolerance whatif --plan "$p" --slow 0:4 --slow 1:4 --tolerance 0 --granule 128
    run whatif-output whatif --plan "$p" --slow 5:2 --output @O/whatif.json --quiet
    run whatif-err-factor whatif --plan "$p" --slow 0:0.5
    run whatif-err-rank whatif --plan "$p" --slow 99:2
    run whatif-err-twice whatif --plan "$p" --slow 1:2 --slow 1:3
    run whatif-err-format whatif --plan "$p" --slow 1
    run whatif-err-no-slow whatif --plan "$p"
    run whatif-err-bad-plan whatif --plan in/bad-plan.json --slow 0:2
    run replan-err-frozen replan --plan "$p" --frozen 30
    run replan-err-both replan --plan "$p"
    run replan-err-schedule replan --plan "$p" --schedule in/freeze-bad.json
    run export-err-target export --plan "$p" --to slurm
    run export-err-strategy export --plan "$p" --to hostfile --strategy 99
    run export-err-dtfm-plan export --plan o/dtfm-regional-quiet/dtfm-plan.json --to torchrun
    run export-err-no-plan export --plan o/none.json --to megatron

    # report: SVG and HTML, table and JSON summaries
    run report-amp-het-svg report --plan "$p" --output @O/report.svg --verbose
    run report-amp-het-html report --plan "$p" --output @O/report.html --format json
    run report-amp-het-strategy3 report --plan "$p" --output @O/report.svg --strategy 3 --top-k 2
    run report-h100-llama-html report --plan o/plan-h100-node4-llama-7b-output/plan.json \
        --output @O/report.html
    run report-homogeneous-svg report --plan o/plan-amp-homogeneous-gpt3-xl-output/plan.json \
        --output @O/report.svg --format json --top-k 8
    run report-simulate-svg report --plan o/plan-amp-het-gpt2-amp-simulate-quiet/plan.json \
        --output @O/report.svg
    run report-err-extension report --plan "$p" --output @O/report.png
    run report-err-no-output report --plan "$p"
    run report-err-dtfm-plan report --plan o/dtfm-regional-quiet/dtfm-plan.json \
        --output @O/report.svg
}

# Normalise what measures time or names this machine (see the top).
normalise() {
    local esc_work esc_repo esc_data esc_planner script
    esc() { sed -e 's/[][\/.^$*+?(){}|#]/\\&/g' <<<"$1"; }
    esc_work=$(esc "$WORK")
    esc_repo=$(esc "$REPO")
    esc_planner=$(esc "$PLANNER")
    script=$(mktemp)
    {
        # search wall time (plan JSON; --verbose lines of plan and
        # decentralized), and the pid in temporary file names
        cat <<'EOF'
s#("(elapsed_s|best_at_s)"[[:space:]]*:[[:space:]]*)-?[0-9][-+0-9.eE]*#\1"<time>"#g
s#(candidates scored, [0-9]+ rejected for memory, [0-9]+ ruled out, )[0-9.]+ s#\1<time> s#
s#(evaluations, [0-9]+ (candidates|steps), )[0-9.]+ s, best found at [0-9.]+ s#\1<time> s, best found at <time> s#
s#\.tmp\.[0-9]+#.tmp.<pid>#g
EOF
        echo "s#$esc_planner#<PLANNER>#g"
        echo "s#$esc_work#<WORK>#g"
        if [[ -d $DATA ]]; then
            esc_data=$(esc "$(cd "$DATA" && pwd -P)")
            echo "s#$esc_data#<DATA>#g"
        fi
        echo "s#$esc_repo#<REPO>#g"
    } >"$script"
    find "$OUT" -type f -exec sed -i -E -f "$script" {} +
    rm -f "$script"
}

cmd_capture() {
    local planner=$1 outdir=$2 t0
    [[ -f $planner && -x $planner ]] || die "'$planner' is not an executable file"
    PLANNER=$(cd "$(dirname "$planner")" && pwd -P)/$(basename "$planner")
    if [[ -e $outdir ]]; then
        [[ -d $outdir && -z $(ls -A "$outdir") ]] || die "'$outdir' exists and is not an empty directory"
    fi
    mkdir -p "$outdir"
    OUT=$(cd "$outdir" && pwd -P)
    [[ -d $REPO/examples ]] || die "no examples in '$REPO'"

    # Private work dir: a copy of the examples (and AMP data), inputs made
    # up here, and the files the runs write.
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-outputs.XXXXXXXXXX")
    WORK=$(cd "$WORK" && pwd -P)
    trap 'rm -rf "$WORK"' EXIT
    cp -R "$REPO/examples" "$WORK/examples"
    if [[ -d $DATA/amp ]]; then
        mkdir -p "$WORK/data"
        cp -R "$DATA/amp" "$WORK/data/amp"
    fi
    cd "$WORK"
    # stderr is a file, so there is no progress line; fix the locale of printf
    export LC_ALL=C
    # modes of written files (NAME.files.list) do not depend on the caller
    umask 022
    NRUNS=0
    t0=$SECONDS

    write_inputs
    capture_help_and_errors
    capture_plan
    # one simulate plan to draw (capture_plan_users reads it)
    run plan-amp-het-gpt2-amp-simulate-quiet --cluster examples/amp-het.json \
        --model examples/gpt2-amp.json --fidelity simulate --quiet --output @O/plan.json
    capture_evaluate
    capture_calibrate
    capture_decentralized
    capture_plan_users

    normalise
    echo "captured $NRUNS runs into $OUT in $((SECONDS - t0)) s" >&2
}

[[ $# -ge 1 ]] || usage
case $1 in
capture)
    [[ $# -eq 3 ]] || usage
    cmd_capture "$2" "$3"
    ;;
diff)
    [[ $# -eq 3 ]] || usage
    cmd_diff "$2" "$3"
    ;;
-h | --help)
    sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
    ;;
*)
    usage
    ;;
esac
