#!/usr/bin/env bash
# Trains one config in fp32 and in bf16 (same seed, data, schedule) and prints the
# test accuracy and training throughput of each, and the bf16/fp32 speed-up.
# Usage: scripts/precision_compare.sh CONFIG [EPOCHS] [extra --set arguments...]
# Runs go to runs/precision_<config>_{fp32,bf16}.
set -euo pipefail
cd "$(dirname "$0")/.."
config=$1; epochs=${2:-1}; shift $(( $# >= 2 ? 2 : 1 ))
name=$(basename "$config" .yaml)
export BIASLAB_HOME=${BIASLAB_HOME:-$PWD}
for p in fp32 bf16; do
  build/biaslab train -c "$config" --set train.epochs="$epochs" --set train.precision=$p "$@" \
    --out "runs/precision_${name}_$p" --force > "runs/precision_${name}_$p.log" 2>&1 \
    || { cat "runs/precision_${name}_$p.log"; exit 1; }
done
python3 - "$name" "$epochs" <<'P'
import json, sys
name, epochs = sys.argv[1], sys.argv[2]
rows = {}
for p in ("fp32", "bf16"):
    d = f"runs/precision_{name}_{p}"
    s, t = json.load(open(f"{d}/summary.json")), json.load(open(f"{d}/timing.json"))
    rows[p] = (s["final"]["test_acc"], t["train_images_per_s"], t["train_time_s"])
print(f"{name}, {epochs} epoch(s), {json.load(open(f'runs/precision_{name}_fp32/summary.json'))['threads']} threads")
print(f"{'precision':<10}{'test acc':>10}{'train img/s':>14}{'train s':>10}")
for p, (acc, ips, secs) in rows.items():
    print(f"{p:<10}{100*acc:>9.2f}%{ips:>14.0f}{secs:>10.1f}")
print(f"bf16/fp32: speed-up {rows['bf16'][1]/rows['fp32'][1]:.2f}x, accuracy {100*(rows['bf16'][0]-rows['fp32'][0]):+.2f} points")
P
