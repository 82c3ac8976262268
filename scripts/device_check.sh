#!/usr/bin/env bash
# The GPU check: one command for the GPU machine (docs/gpu.md), sized to end within about
# 8 minutes there (16 cores, one GPU). It builds biaslab against the machine's LibTorch and
# the bundle of scripts/device_bundle.sh --data (carried as .device-bundle, OpenCV off),
# then on the GPU: the unit tests (those with CUDA variants run them); ResNet-20,
# vit_lite_p4 and vit_hybrid_lite trained for STEPS steps on Fashion-MNIST in bf16 and in
# fp16 (loss scaler), each evaluated again (equal to its recorded metrics) and exported to
# TorchScript, checked with the machine's Python torch; `bench` train/infer with MFU
# against the measured peak; a run killed with SIGKILL and resumed; NCCL with one rank and
# an attempt with two ranks sharing the GPU.
# Every step runs even when an earlier one failed; the exit status is 1 if any failed.
# Results: OUT/results.json (one entry per step: name, ok, seconds, its figures), OUT/log.txt
# (every command's output) and OUT/gpu.txt; OUT is $OUT where set (the device tool), else
# runs/device-check. The runs themselves go to runs/device-check/work (replaced each time).
#
# Usage: scripts/device_check.sh [--dry-run] [--steps N] [--out DIR]
#   --dry-run: on a machine without a GPU, every step that does not need one, with
#              runtime.device cpu: fp32 instead of bf16/fp16 (the loss scaler is a GPU
#              path), gloo instead of NCCL, 30 steps, shorter benchmarks; the build
#              directory is reused.
#   BUILD_DIR (default build-device; --dry-run: build-rehearsal, scripts/device_rehearsal.sh's).
set -uo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/torch_arg.sh
dry=0 steps="" out=${OUT:-runs/device-check}
while (($#)); do
  case $1 in
    --dry-run) dry=1; shift ;;
    --steps) steps=${2:?--steps needs a number}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) echo "device_check: unknown argument '$1' (expected --dry-run, --steps N, --out DIR)" >&2; exit 2 ;;
  esac
done
bundle=$PWD/.device-bundle
data=$bundle/data/fashion-mnist
for f in "$bundle/MANIFEST" "$data/train-images-idx3-ubyte.gz"; do
  [[ -f $f ]] || { echo "device_check: $f missing: run scripts/device_bundle.sh --data first (and carry .device-bundle)" >&2; exit 2; }
done
if ((dry)); then
  device=cpu precisions=(fp32) backend=gloo steps=${steps:-30} bench=(--steps 5 --warmup 1 --repeats 2)
  build_dir=${BUILD_DIR:-build-rehearsal}
  unity=()  # as device_rehearsal.sh configured it
else
  device=cuda precisions=(bf16 fp16) backend=nccl steps=${steps:-300} bench=()
  build_dir=${BUILD_DIR:-build-device}
  # Unity batches of 4 files: about 40 objects to spread over 16 cores (a guess: not measured there).
  unity=(-DBIASLAB_UNITY_BATCH="${BIASLAB_UNITY_BATCH:-4}")
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$PWD/runs/device-check/work
rm -rf "$work" "$out/steps.jsonl"
mkdir -p "$work"
log=$out/log.txt
: > "$log"
export BIASLAB_HOME=$PWD
PY=${BIASLAB_PYTHON:-python3}
say() { echo "device_check: $*" | tee -a "$log"; }
# step NAME FIGURES_FILE -- COMMAND...: runs it with its output in the log, records the outcome.
step() {
  local name=$1 figures=$2; shift 3
  local start=$SECONDS status=0
  say "== $name: $*"
  "$@" >> "$log" 2>&1 || status=$?
  local seconds=$((SECONDS - start))
  "$PY" - "$name" "$status" "$seconds" "$figures" >> "$out/steps.jsonl" <<'P'
import json, os, sys
name, status, seconds, figures = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
entry = {"name": name, "ok": status == 0, "exit": status, "seconds": seconds}
if figures != "-" and os.path.exists(figures):
    try:
        entry["figures"] = json.load(open(figures))
    except ValueError:
        entry["figures_unreadable"] = figures
print(json.dumps(entry))
P
  ((status == 0)) && say "ok: $name (${seconds} s)" || say "FAILED: $name (exit $status, ${seconds} s)"
  return 0
}

say "$(date -u +%FT%TZ) dry_run=$dry device=$device steps=$steps build=$build_dir"
"$PY" -c 'import torch; print("python torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())' 2>&1 | tee -a "$log"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$log" "$out/gpu.txt"
torch_dir=$(torch_package_dir "$PY")

build() {
  cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$torch_dir" \
    -DBIASLAB_PYTHON="$(command -v "$PY")" -DBIASLAB_BUNDLE="$bundle" -DBIASLAB_WITH_OPENCV=OFF \
    "${unity[@]}" \
    ${TORCH_CUDA_ARCH_LIST:+-DTORCH_CUDA_ARCH_LIST=$TORCH_CUDA_ARCH_LIST} &&
    cmake --build "$build_dir" -j "$(nproc)"
}
step build - -- build
B=$PWD/$build_dir/biaslab
[[ -x $B ]] || { say "no biaslab binary in $build_dir: nothing else can run"; }
step unit_tests - -- ctest --test-dir "$build_dir" -L unit --output-on-failure -j 4

common=(--set "data.root=$data" --set "runtime.device=$device" --set "train.steps=$steps" --set train.epochs=1
        --set train.log_every=50 --set train.checkpoint_every=100)
declare -A config=([resnet20]=configs/fmnist_resnet20.yaml [vit_lite_p4]=configs/fmnist_vit_lite.yaml
                   [vit_hybrid_lite]=configs/fmnist_hybrid_lite.yaml)
check_eval() {  # RUN: eval reproduces summary.json's test metrics
  "$B" eval "$1" --json > "$1/eval.json" &&
    "$PY" -c "import json,sys; r=json.load(open('$1/eval.json')); print(r); sys.exit(0 if r['matches_recorded'] else 1)"
}
check_export() {  # RUN: TorchScript export loads in Python with the native logits
  "$B" export "$1" --json > "$1/export.json" &&
    "$PY" tests/python/check_export.py "$("$PY" -c "import json; print(json.load(open('$1/export.json'))['file'])")"
}
for model in resnet20 vit_lite_p4 vit_hybrid_lite; do
  for precision in "${precisions[@]}"; do
    run=$work/${model}_$precision
    step "train_${model}_$precision" "$run/summary.json" -- "$B" train -c "${config[$model]}" "${common[@]}" \
      --set "train.precision=$precision" --out "$run"
    step "eval_${model}_$precision" "$run/eval.json" -- check_eval "$run"
    step "export_${model}_$precision" "$run/export.json" -- check_export "$run"
  done
done

for model in resnet20 vit_lite_p4 vit_hybrid_lite; do
  for precision in "${precisions[@]}"; do
    f=$work/bench_${model}_$precision.json
    step "bench_${model}_$precision" "$f" -- bash -c "'$B' bench -c '${config[$model]}' --set 'data.root=$data' \
      --set runtime.device=$device --set train.precision=$precision --only train,infer ${bench[*]} --json > '$f'"
  done
done

# Killed with SIGKILL after a checkpoint, rerun with the same command: resumes and ends
# with the same metrics as the uninterrupted run (compared, not required bitwise).
p=${precisions[0]}
resume_args=(-c "${config[resnet20]}" "${common[@]}" --set "train.precision=$p" --out "$work/resume_$p")
killed() {
  local status=0
  BIASLAB_FAULT=kill_after_step:$((steps / 2 + 1)) "$B" train "${resume_args[@]}" || status=$?
  ((status == 137)) || { echo "expected death by SIGKILL (137), got $status"; return 1; }
  "$B" train "${resume_args[@]}" &&
    "$PY" - "$work/resnet20_$p/summary.json" "$work/resume_$p/summary.json" "$work/resume.json" <<'P'
import json, sys
a, b = (json.load(open(f))["final"] for f in sys.argv[1:3])
r = {"uninterrupted_test_acc": a["test_acc"], "resumed_test_acc": b["test_acc"], "bitwise_equal_metrics": a == b}
json.dump(r, open(sys.argv[3], "w"))
print(r)
sys.exit(0 if abs(a["test_acc"] - b["test_acc"]) <= 0.02 else 1)
P
}
step "kill_and_resume_$p" "$work/resume.json" -- killed

step "dist_${backend}_1_rank" "$work/dist1/summary.json" -- "$B" train -c "${config[resnet20]}" "${common[@]}" \
  --set "train.precision=$p" --set "runtime.dist_backend=$backend" --nproc 1 --out "$work/dist1"
# Two ranks on one GPU: NCCL refuses a GPU shared by two ranks in one communicator, so this
# step records what happens (it is expected to fail there; gloo in the dry run must pass).
step "dist_${backend}_2_ranks" "$work/dist2/summary.json" -- "$B" train -c "${config[resnet20]}" "${common[@]}" \
  --set "train.precision=$p" --set "runtime.dist_backend=$backend" --set train.batch_size=128 --nproc 2 --out "$work/dist2"

"$PY" - "$out" "$dry" <<'P'
import json, sys
out, dry = sys.argv[1], sys.argv[2] == "1"
steps = [json.loads(l) for l in open(f"{out}/steps.jsonl")]
json.dump({"dry_run": dry, "steps": steps}, open(f"{out}/results.json", "w"), indent=1)
failed = [s["name"] for s in steps if not s["ok"]]
print(f"device_check: {len(steps) - len(failed)}/{len(steps)} steps passed" + (f"; failed: {', '.join(failed)}" if failed else ""))
P
rm -f "$out/steps.jsonl"
# The two-rank NCCL attempt on one GPU does not decide the outcome (see above).
"$PY" -c "
import json, sys
s = json.load(open('$out/results.json'))['steps']
sys.exit(0 if all(x['ok'] for x in s if x['name'] != 'dist_nccl_2_ranks') else 1)"
