# Dataset tools end to end: Fashion-MNIST exported as an image folder trains to the very
# same weights as the IDX files; synthetic tasks export; the loader benchmark runs; bad
# data and data keys fail with their exit codes.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
cfg="$SRC/configs/fmnist_resnet20.yaml"
"$BIASLAB" data export -c "$cfg" --out fmnist
[[ $(find fmnist/train -name '*.png' | wc -l) == 60000 && $(find fmnist/test -name '*.png' | wc -l) == 10000 ]] \
  || fail "export wrote the wrong number of images"
[[ -d fmnist/train/0_T-shirt_top && -d fmnist/train/9_Ankle_boot ]] || fail "class folders"
expect_status 2 "already exists" "--force" -- "$BIASLAB" data export -c "$cfg" --out fmnist

short=(--set data.train_fraction=0.02 --set data.test_fraction=0.05 --set train.steps=12 --set train.batch_size=32
       --set train.precision=fp32 --set runtime.threads=2 --set data.crop_padding=2 --set data.hflip=true)
"$BIASLAB" train -c "$cfg" "${short[@]}" --out from_idx >/dev/null 2>&1 || fail "training on IDX"
"$BIASLAB" train -c "$cfg" "${short[@]}" --set data.preset="$WORK/fmnist/dataset.yaml" --set data.workers=2 \
  --out from_folder >/dev/null 2>&1 || fail "training on the exported folder"
a=$("$BIASLAB" eval from_idx --json) b=$("$BIASLAB" eval from_folder --json)
python3 - "$a" "$b" <<'PY' || fail "IDX and image-folder runs differ"
import json, sys
a, b = (json.loads(s) for s in sys.argv[1:])
assert a["weights_fingerprint"] == b["weights_fingerprint"], (a, b)
assert a["test_acc"] == b["test_acc"] and a["test_loss"] == b["test_loss"], (a, b)
print("ok: identical weights", a["weights_fingerprint"], "test acc", a["test_acc"])
PY
cmp from_idx/metrics.csv from_folder/metrics.csv || fail "metrics differ"

# Synthetic tasks: deterministic export, readable back.
for task in texture same_different; do
  "$BIASLAB" data export -c "$cfg" --set data.preset=synth_$task --set data.train_size=40 --set data.test_size=20 \
    --out "synth_$task" >/dev/null
  [[ $(find "synth_$task" -name '*.png' | wc -l) == 60 ]] || fail "synthetic $task export"
done
"$BIASLAB" data export -c "$cfg" --set data.preset=synth_texture --set data.train_size=40 --set data.test_size=20 \
  --out again >/dev/null
diff -r synth_texture/train again/train >/dev/null || fail "synthetic export is not deterministic"

out=$("$BIASLAB" data bench -c "$cfg" --set data.trivial_augment=true --batches 5 --repeats 2)
echo "$out"
grep -qE "normalise only +[0-9]+ images/s" <<<"$out" || fail "data bench output"

# Bad data: exit 3 naming the file; bad data keys: exit 2.
mkdir -p broken/train/a broken/train/b broken/test/a broken/test/b
cp fmnist/train/0_T-shirt_top/$(ls fmnist/train/0_T-shirt_top | head -1) broken/train/a/
cp fmnist/train/1_Trouser/$(ls fmnist/train/1_Trouser | head -1) broken/train/b/
cp broken/train/a/* broken/test/a/ && cp broken/train/b/* broken/test/b/
echo garbage > broken/train/b/zz.png
expect_status 2 "data.train_images" "does not apply to data.format 'folder'" -- \
  "$BIASLAB" train -c "$cfg" --set data.format=folder --set data.root="$WORK/broken" --out bad
cat > folder.yaml <<YAML
model: {preset: resnet20}
data: {format: folder, root: $WORK/broken, image_size: 28, channels: 1, num_classes: 2, mean: [0.5], std: [0.5]}
train: {steps: 1, batch_size: 2}
YAML
expect_status 3 "zz.png: OpenCV cannot decode this image" -- "$BIASLAB" train -c folder.yaml --out bad
expect_status 0 -- "$BIASLAB" train -c folder.yaml --set data.on_bad_image=skip --set data.test_fraction=1 --out skipped
grep -q "zz.png" skipped/skipped_images.txt || fail "skipped images not listed"
expect_status 3 "is not a folder" -- "$BIASLAB" train -c folder.yaml --set data.root="$WORK/nowhere" --out bad
echo PASS
