#!/usr/bin/env bash
# launcher/end-to-end.sh: profile -> plan -> launch -> calibrate on this
# machine's GPUs, one command from a clean checkout:
#
#   launcher/end-to-end.sh [MODEL.json] [OUT_DIR]
#
# Builds hetplan (CUDA, cuBLAS, CUPTI, NCCL found by CMake), profiles the
# model on GPU 0, writes a one-GPU cluster of that GPU's type, plans it,
# launches the plan's three best strategies with `hetplan-launch --spawn 1`
# (each prints measured against predicted time and memory and writes a
# trial), calibrates the cost model on the trials and plans again with
# the calibrated profile.  With GPUS=N (N > 1) it also plans and launches
# an N-GPU cluster of the same node with --spawn N.  Needs python3 (to
# merge the trial files).  Without a GPU it stops after the dry run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/examples/gpt2-345m.json}
out=${2:-$root/out/end-to-end}
build=${BUILD:-$root/build}
gpus=${GPUS:-1}
iters=${ITERATIONS:-20}

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j"$(nproc)"
mkdir -p "$out"
if [ ! -x "$build/hetplan-launch" ]; then
  echo "end-to-end: hetplan-launch was not built (no CUDA toolkit found)" >&2
  exit 6
fi

if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "end-to-end: no NVIDIA GPU here; planning with the built-in device" \
       "catalogue and showing the dry run only" >&2
  dev=H100-SXM
else
  nvidia-smi -L
  # 1. profile on GPU 0 (the device type name comes from the GPU)
  "$build/hetplan-profile" --model "$model" --tp 1 --mbs 1,2,4,8,16 \
      --repeats 20 --output "$out/profile.json"
  dev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["entries"][0]["device"])' \
        "$out/profile.json")
fi

# 2. a one-GPU cluster of this GPU's type, and its plan
cat > "$out/cluster-1.json" <<JSON
{"name": "local-1", "nodes": [{"name": "local", "device": "$dev", "gpus": 1,
  "intra_gbps": 3600, "nic_gbps": 100}]}
JSON
profile_opt=()
[ -f "$out/profile.json" ] && profile_opt=(--profile "$out/profile.json")
"$build/planner" --cluster "$out/cluster-1.json" --model "$model" \
    "${profile_opt[@]}" --output "$out/plan-1.json"
"$build/hetplan-launch" --plan "$out/plan-1.json" --dry-run --spawn 1
[ -f "$out/profile.json" ] || exit 0

# 3. launch the three best strategies, one trial each
for k in 1 2 3; do
  "$build/hetplan-launch" --plan "$out/plan-1.json" --strategy "$k" --spawn 1 \
      --iterations "$iters" --output "$out/trial-1-$k.json"
done

# 4. calibrate on the trials and plan again
python3 - "$out" <<'PY'
import glob, json, sys
out = sys.argv[1]
trials = [json.load(open(f)) for f in sorted(glob.glob(out + "/trial-1-*.json"))]
json.dump({"strategies": [s for t in trials for s in t["strategies"]]},
          open(out + "/trials.json", "w"), indent=1)
PY
"$build/planner" calibrate --cluster "$out/cluster-1.json" --model "$model" \
    --profile "$out/profile.json" --trials "$out/trials.json" \
    --output "$out/calibrated-profile.json"
"$build/planner" --cluster "$out/cluster-1.json" --model "$model" \
    --profile "$out/calibrated-profile.json" --output "$out/plan-1-calibrated.json"

# 5. several GPUs of this node, one process each
if [ "$gpus" -gt 1 ]; then
  cat > "$out/cluster-$gpus.json" <<JSON
{"name": "local-$gpus", "nodes": [{"name": "local", "device": "$dev", "gpus": $gpus,
  "intra_gbps": 3600, "nic_gbps": 100}]}
JSON
  "$build/planner" --cluster "$out/cluster-$gpus.json" --model "$model" \
      --profile "$out/calibrated-profile.json" --output "$out/plan-$gpus.json"
  "$build/hetplan-launch" --plan "$out/plan-$gpus.json" --dry-run --spawn "$gpus"
  "$build/hetplan-launch" --plan "$out/plan-$gpus.json" --spawn "$gpus" \
      --iterations "$iters" --output "$out/trial-$gpus.json"
fi
