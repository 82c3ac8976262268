# `biaslab convert` and `biaslab eval --weights`: torchvision's ResNet-18 and ViT-B/16
# weights (random, saved by Python as state dicts and as TorchScript) become biaslab
# TorchScript archives that give torchvision's logits in Python, and state dicts that
# torchvision loads back; eval --weights of a run's exported state dict reproduces the
# run's recorded test metrics (nothing is trained: BatchNorm statistics stay); bad input
# gives clear errors and writes nothing.
source "$(dirname "$0")/lib.sh" "$@"
PYTHON=${BIASLAB_PYTHON:-/usr/bin/python3}
cd "$WORK"
mkdir tv
status=0
for name in resnet18 vit_b_16; do
  "$PYTHON" "$SRC/tests/python/torchvision_interop.py" make tv $name || status=$?
  [[ $status == 0 || $status == 77 ]] || fail "torchvision_interop.py make $name failed"
done
# The configs of the two models: 3 channels, torchvision's sizes (64 px for the ResNet,
# 32 px for the ViT), Fashion-MNIST resized for eval.
for spec in "resnet18 resnet18 64" "vit_b_16 vit_b16 32"; do
  read -r name preset size <<<"$spec"
  cat > $name.yaml <<Y
model: {preset: $preset}
data: {preset: fashion_mnist, image_size: $size, channels: 3, mean: [0.5, 0.5, 0.5], std: [0.5, 0.5, 0.5],
       test_fraction: 0.02}
runtime: {threads: 2}
Y
done
if [[ $status == 77 ]]; then
  skip "the torchvision half ($PYTHON has no torch/torchvision; install python3-torchvision)"
else
  # Logits against torchvision's (Python's torch and LibTorch may pick other kernels):
  # the same to 1e-6 for the ResNet (exactly equal where both take the same path).
  for spec in "resnet18 1e-6" "vit_b_16 1e-5"; do
    read -r name tolerance <<<"$spec"
    for form in state_dict script; do
      "$BIASLAB" convert tv/$name.$form.pt -c $name.yaml --out $name.$form.biaslab.pt --json > convert.json \
        || fail "convert tv/$name.$form.pt"
      python3 - convert.json <<'P' || fail "convert report of $name.$form"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["max_abs_diff"] <= 1e-5 and r["check_images"] == 8, r
assert r["meta"]["converted_from"].endswith(".pt") and r["meta"]["trained_with"] is None, r["meta"]
P
      line=$("$PYTHON" "$SRC/tests/python/torchvision_interop.py" archive tv $name $name.$form.biaslab.pt)
      echo "$line"
      python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) <= $tolerance else 1)" "${line##* }" \
        || fail "$name.$form: the archive's logits differ from torchvision's by more than $tolerance: $line"
    done
    # Back out with torchvision's names: torchvision loads it (strict) and gives its outputs.
    "$BIASLAB" convert tv/$name.state_dict.pt -c $name.yaml --format state_dict --names torchvision \
      --out tv/$name.biaslab.pt > /dev/null || fail "convert $name --format state_dict --names torchvision"
    cp tv/$name.io.pt tv/$name.biaslab_io.pt
    "$PYTHON" "$SRC/tests/python/torchvision_interop.py" check tv $name || fail "torchvision rejects the converted $name"
  done
  # eval --weights on torchvision's ResNet-18: evaluates without training.
  "$BIASLAB" eval --weights tv/resnet18.state_dict.pt -c resnet18.yaml --json > tv_eval.json || fail "eval --weights"
  python3 -c "import json; r = json.load(open('tv_eval.json')); assert r['test_size'] == 200 and 'recorded_test_acc' not in r, r" \
    || fail "eval --weights report: $(cat tv_eval.json)"
  echo "ok: eval --weights of torchvision's resnet18"
  # Wrong model for the weights: the missing and unexpected keys are named, nothing is written.
  expect_status 5 "tv/vit_b_16.state_dict.pt" "missing" -- "$BIASLAB" convert tv/vit_b_16.state_dict.pt -c resnet18.yaml --out wrong.pt
  # ... without the hint of model.init_skip, a training key convert has no use for.
  ! "$BIASLAB" convert tv/vit_b_16.state_dict.pt -c resnet18.yaml --out wrong.pt 2>&1 | grep -q init_skip ||
    fail "convert's refusal points to model.init_skip"
  [[ ! -e wrong.pt ]] || fail "a refused convert wrote wrong.pt"
fi

# eval --weights reproduces a run: train briefly, export the last weights as a state dict,
# evaluate them with the run's config.
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set data.train_per_class=30 --set data.test_fraction=0.05 \
  --set train.epochs=1 --set train.batch_size=50 --set model.widths=[8,16,32] --set model.layers=[1,1,1] \
  --set train.precision=fp32 --set runtime.threads=2 --out run > train.out 2>&1 || { cat train.out; fail "training failed"; }
"$BIASLAB" export run --checkpoint last --format state_dict --out run.state_dict.pt > /dev/null || fail "export state_dict"
"$BIASLAB" eval --weights run.state_dict.pt -c run/config.yaml --json > w.json || fail "eval --weights of the run"
"$BIASLAB" eval run --checkpoint last --json > r.json || fail "eval of the run"
python3 - <<'P' || fail "eval --weights differs from the run's recorded metrics"
import json
w, r, s = json.load(open("w.json")), json.load(open("r.json")), json.load(open("run/summary.json"))
assert w["test_acc"] == r["test_acc"] == s["final"]["test_acc"], (w, r, s["final"])
assert w["test_top5_acc"] == s["final"]["test_top5_acc"], (w, s["final"])
assert abs(w["test_loss"] - s["final"]["test_loss"]) <= 1e-6 * max(1, s["final"]["test_loss"]), (w, s["final"])
assert w["weights_fingerprint"] == r["weights_fingerprint"] == s["weights_fingerprint"], (w, r)
P
echo "ok: eval --weights reproduces the run's final test metrics"
"$BIASLAB" convert run.state_dict.pt -c run/config.yaml --out run.pt > /dev/null || fail "convert of a biaslab state dict"

# Bad input.
expect_status 2 "--weights" "needs -c CONFIG" -- "$BIASLAB" eval --weights run.state_dict.pt
expect_status 2 "not both" -- "$BIASLAB" eval run --weights run.state_dict.pt -c run/config.yaml
expect_status 2 "a run directory or checkpoint" -- "$BIASLAB" eval
expect_status 2 "--out" -- "$BIASLAB" convert run.state_dict.pt -c run/config.yaml
expect_status 2 "does not exist" -- "$BIASLAB" convert missing.pt -c run/config.yaml --out x.pt
printf 'not a torch file' > junk.pt
expect_status 5 "junk.pt" -- "$BIASLAB" convert junk.pt -c run/config.yaml --out x.pt
[[ ! -e x.pt ]] || fail "a refused convert wrote x.pt"
cp run.pt kept.pt
expect_status 5 "not a biaslab export" -- "$BIASLAB" convert run.state_dict.pt -c run/config.yaml --out junk.pt
cmp -s junk.pt <(printf 'not a torch file') || fail "convert overwrote a file it did not write"
echo "convert / eval --weights end-to-end passed"
