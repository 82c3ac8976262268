# `biaslab export` and `biaslab predict` end to end: a briefly trained model exported to
# TorchScript loads in Python (BIASLAB_PYTHON) with the native logits; predict over the
# Fashion-MNIST test set written as PNG files gives eval's accuracy; state dicts move to
# another run through model.init_from; bad input gives clear errors and writes nothing.
source "$(dirname "$0")/lib.sh" "$@"
PYTHON=${BIASLAB_PYTHON:-/usr/bin/python3}
cd "$WORK"
# float32 training and evaluation: the export computes in float32, so eval and predict
# must compare the same arithmetic.
common=(--set data.train_per_class=100 --set train.epochs=2 --set train.batch_size=50 --set train.precision=fp32
        --set model.widths=[8,16,32] --set model.layers=[1,1,1] --set runtime.threads=2)
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --set sched.warmup_steps=2 --out run > train.out 2>&1 \
  || { cat train.out; fail "training failed"; }

"$BIASLAB" export run --json > export.json
python3 - <<'P' || fail "export report"
import json
r = json.load(open("export.json"))
assert r["file"] == "run/export/best.pt", r
assert r["max_abs_diff"] <= 1e-5 and r["check_images"] == 8, r
m = r["meta"]
assert m["image_size"] == 28 and m["in_chans"] == 1 and len(m["class_names"]) == 10 and len(m["mean"]) == 1, m
assert m["class_names"][0] == "T-shirt/top", m
P
[[ -s run/export/best.pt ]] || fail "no run/export/best.pt"
echo "ok: export run -> run/export/best.pt"
status=0
"$PYTHON" "$SRC/tests/python/check_export.py" run/export/best.pt || status=$?
if [[ $status == 77 ]]; then
  skip "the Python check of the export ($PYTHON has no torch; install python3-torch)"
else
  [[ $status == 0 ]] || fail "Python could not load the export or its logits differ"
fi

# predict over the test set as PNG files == eval (float32) over the IDX files.
"$BIASLAB" data export -c "$SRC/configs/fmnist_resnet20.yaml" --out fmnist > /dev/null
"$BIASLAB" predict run/export/best.pt fmnist/test --json --threads 2 > predict.json
"$BIASLAB" eval run --json > eval.json
python3 - <<'P' || fail "predict and eval disagree"
import json
p, e = json.load(open("predict.json")), json.load(open("eval.json"))
assert p["images"] == 10000 and p["labelled"] == 10000, (p["images"], p["labelled"])
assert p["accuracy"] == e["test_acc"], (p["accuracy"], e["test_acc"])
first = p["predictions"][0]
assert first["file"].startswith("fmnist/test/0_T-shirt_top/") and first["label"] == 0, first
assert len(first["top"]) == 5 and abs(sum(t["prob"] for t in first["top"]) - 1) < 0.2, first
print(f"ok: predict accuracy {p['accuracy']} == eval accuracy {e['test_acc']} over 10,000 PNG files")
P
expect_status 0 "000000.png:" "accuracy over the 1 images" -- \
  "$BIASLAB" predict run/export/best.pt fmnist/test/9_Ankle_boot/000000.png --topk 3

# State dicts: export, start a new run from them (new classifier), refuse ones that do not fit.
"$BIASLAB" export run --format state_dict > /dev/null
[[ -s run/export/best.state_dict.pt ]] || fail "no state dict written"
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --set train.epochs=1 \
  --set model.init_from=run/export/best.state_dict.pt --set model.init_skip=[fc] --out from_weights > init.out 2>&1 \
  || { cat init.out; fail "training from exported weights failed"; }
grep -q "tensors initialised from run/export/best.state_dict.pt (kept fresh: fc)" from_weights/train.log \
  || fail "train.log does not say where the weights came from"
# Without init_skip the new run starts from exactly the exported weights: the fingerprint
# train.log gives for them is eval's fingerprint of the source checkpoint.
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --set train.epochs=1 \
  --set model.init_from=run/export/best.state_dict.pt --out all_weights > all.out 2>&1 \
  || { cat all.out; fail "training from all exported weights failed"; }
fingerprint=$(python3 -c "import json; print(json.load(open('eval.json'))['weights_fingerprint'])")
grep -q "initialised from run/export/best.state_dict.pt; weights fingerprint $fingerprint" all_weights/train.log \
  || fail "the run did not start from the exported weights (fingerprint $fingerprint): $(grep initialised all_weights/train.log)"
echo "ok: model.init_from"
"$BIASLAB" export run --format state_dict --names torchvision --out tv.pt > /dev/null  # ResNets: the same names
expect_status 5 "the weights do not fit the model" "unexpected (18): layer3.0.bn1.bias" "wrong shape (1): fc.weight (file [10, 32], model [10, 16])" \
  "(model.init_skip lists key prefixes" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --set model.widths=[8,16] \
  --set model.layers=[1,1] --set model.init_from=run/export/best.state_dict.pt --out misfit
[[ ! -e misfit ]] || fail "a refused init_from left a run directory behind"
expect_status 2 "model.init_from: no such file 'nope.pt'" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set model.init_from=nope.pt --out nope
expect_status 2 "model.init_skip" "needs model.init_from" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set model.init_skip=[fc] --out nope
expect_status 2 "model.init_skip: 'heads' matches no key" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" \
  --set model.init_from=run/export/best.state_dict.pt --set model.init_skip=[heads] --out nope
# A ViT that torchvision's VisionTransformer cannot represent (relative bias) is refused.
"$BIASLAB" train -c "$SRC/configs/fmnist_vit_lite.yaml" --set data.train_per_class=10 --set train.steps=1 \
  --set model.depth=1 --set model.pos_embed=relative --set runtime.threads=2 --out vit_rel > /dev/null 2>&1 \
  || fail "tiny ViT run failed"
expect_status 2 "--names torchvision" "this model has model.pos_embed relative" -- \
  "$BIASLAB" export vit_rel --format state_dict --names torchvision
[[ ! -e vit_rel/export ]] || fail "a refused export left files behind"

# The EMA weights: `eval --ema` reproduces the EMA test accuracy the run recorded, and
# `export --checkpoint ema` writes those weights (evaluated back through --weights), not
# the model's.
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --set train.epochs=1 --set train.ema_decay=0.9 \
  --set sched.warmup_steps=2 --out ema_run > ema_train.out 2>&1 || { cat ema_train.out; fail "EMA training failed"; }
"$BIASLAB" eval ema_run --checkpoint last --ema --json > ema_eval.json || fail "eval --ema"
"$BIASLAB" eval ema_run --checkpoint last --json > model_eval.json || fail "eval of the model's weights"
"$BIASLAB" export ema_run --checkpoint ema --format state_dict --out ema_sd.pt > /dev/null || fail "export --checkpoint ema"
"$BIASLAB" eval --weights ema_sd.pt -c ema_run/config.yaml --json > ema_weights_eval.json || fail "eval --weights of the EMA export"
python3 - <<'P' || fail "the EMA weights through eval --ema and export --checkpoint ema"
import json
s = json.load(open("ema_run/summary.json"))
ema, model, exported = (json.load(open(f)) for f in ("ema_eval.json", "model_eval.json", "ema_weights_eval.json"))
assert ema["ema"] and not model["ema"], (ema["ema"], model["ema"])
assert ema["test_acc"] == s["final"]["ema_test_acc"], (ema["test_acc"], s["final"])
assert model["test_acc"] == s["final"]["test_acc"], (model["test_acc"], s["final"])
assert ema["weights_fingerprint"] != model["weights_fingerprint"], "eval --ema evaluated the model's weights"
assert exported["test_acc"] == s["final"]["ema_test_acc"], (exported["test_acc"], s["final"])
print("EMA", ema["test_acc"], "model", model["test_acc"])
P
echo "ok: eval --ema and export --checkpoint ema give the EMA weights"

# Bad input.
expect_status 5 "nothing: no such run directory or checkpoint file" -- "$BIASLAB" export nothing
expect_status 2 "--checkpoint: 'worst' is not one of best, last, ema" -- "$BIASLAB" export run --checkpoint worst
expect_status 2 "--out: required when exporting a checkpoint file" -- "$BIASLAB" export run/checkpoints/last.pt
expect_status 5 "not a TorchScript archive" -- "$BIASLAB" predict run/checkpoints/best.pt fmnist/test/9_Ankle_boot/000000.png
expect_status 2 "--ema" "was trained without EMA" -- "$BIASLAB" export run --checkpoint ema
expect_status 3 "missing.png: no such file or folder" -- "$BIASLAB" predict run/export/best.pt missing.png
echo "not an image" > bad.png
expect_status 3 "bad.png: OpenCV cannot decode this image" -- "$BIASLAB" predict run/export/best.pt bad.png
expect_status 2 "--topk: expected a positive number" -- "$BIASLAB" predict run/export/best.pt bad.png --topk 0
echo "e2e export: all checks passed"
