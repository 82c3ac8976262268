#!/usr/bin/env bash
# Installs what is missing, builds, then trains ResNet-20 and a small ViT on
# Fashion-MNIST with a short schedule, prints their test accuracies side by side and
# exports both to TorchScript.
# EPOCHS=N changes the schedule length (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
BUILD_TARGETS=biaslab scripts/build.sh  # the program only: the demo runs no tests
export BIASLAB_HOME=$PWD
EPOCHS=${EPOCHS:-2}
declare -A acc
for cfg in fmnist_resnet20 fmnist_vit_lite; do
  echo "=== biaslab train -c configs/$cfg.yaml --set train.epochs=$EPOCHS ==="
  build/biaslab train -c "configs/$cfg.yaml" --set train.epochs="$EPOCHS" --out "runs/demo_$cfg" --force
  acc[$cfg]=$(python3 -c "import json; s=json.load(open('runs/demo_$cfg/summary.json')); \
t=json.load(open('runs/demo_$cfg/timing.json')); \
print(f\"{100*s['final']['test_acc']:.2f}% test accuracy, {s['model']['parameters']:,} parameters, {t['train_time_s']:.0f}s training\")")
  build/biaslab export "runs/demo_$cfg"
done
echo
echo "Fashion-MNIST, $EPOCHS epoch(s) each:"
printf '  %-18s %s\n' "ResNet-20" "${acc[fmnist_resnet20]}" "ViT (vit_lite_p4)" "${acc[fmnist_vit_lite]}"
echo "Run directories: runs/demo_fmnist_resnet20, runs/demo_fmnist_vit_lite"
echo "TorchScript: runs/demo_*/export/best.pt (biaslab predict runs/demo_fmnist_resnet20/export/best.pt IMAGE...)"
