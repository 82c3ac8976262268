# `biaslab analyze` end to end: a briefly trained ViT (with a class token and local
# windows) and a ResNet get their pictures, tables and page; bad input gives clear errors.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
common=(--set data.train_per_class=20 --set train.steps=3 --set train.precision=fp32 --set runtime.threads=2)
"$BIASLAB" train -c "$SRC/configs/fmnist_vit_lite.yaml" "${common[@]}" --set model.depth=2 --set model.attn_window=3 \
  --out vit > vit.out 2>&1 || { cat vit.out; fail "ViT training failed"; }
"$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" "${common[@]}" --out resnet > resnet.out 2>&1 \
  || { cat resnet.out; fail "ResNet training failed"; }

"$BIASLAB" analyze vit --images 8 --show 3 --probe-images 200 > vit_analyze.out
for f in filters.png receptive_field.png receptive_field.csv attention_maps_0.png attention_maps_2.png rollout.png dynamic_kernels.png \
         attention_distance.png attention_distance.csv kernel_variance.csv attention_entropy.csv probes.csv probes.png analysis.json README.md; do
  [[ -s vit/analysis/$f ]] || fail "vit/analysis/$f missing or empty"
done
for png in vit/analysis/*.png; do
  [[ $(head -c 8 "$png" | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "$png is not a PNG"
done
python3 - <<'P' || fail "ViT analysis tables"
import csv, json
rows = list(csv.DictReader(open("vit/analysis/attention_distance.csv")))
assert len(rows) == 2 * 4, len(rows)  # blocks x heads
# 3 x 3 windows on a 7 x 7 grid of 4 px patches: at most the window's corner, 4 sqrt(2) px.
assert all(0 < float(r["mean_distance_px"]) <= 4 * 2 ** 0.5 + 1e-9 for r in rows), rows
n = json.load(open("vit/analysis/analysis.json"))
assert n["images"] == 8 and n["patch_px"] == 4.0 and len(n["attention"]) == 2, n
assert n["receptive_field"]["theoretical_px"] > 0, n  # windows: a finite theoretical field
page = open("vit/analysis/README.md").read()
assert "![mean attention distance](attention_distance.png)" in page and "| block |" in page
# Entropy per head between 0 and log(9) (a 3 x 3 window and the class token: at most 10
# keys), the score variance non-negative; the same numbers in analysis.json.
import math
ent = list(csv.DictReader(open("vit/analysis/attention_entropy.csv")))
assert len(ent) == 2 * 4, len(ent)
assert all(0 <= float(r["entropy_nats"]) <= math.log(10) + 1e-9 and float(r["score_variance"]) >= 0 for r in ent), ent
assert abs(float(ent[0]["entropy_nats"]) - n["attention"][0]["entropy_nats"][0]) < 1e-4, (ent[0], n["attention"][0])
# Bias probes: translation 0..4 px, the shuffle, two rotations, two scales; a shift of 0
# changes no prediction and its accuracy is the model's on those images.
probes = list(csv.DictReader(open("vit/analysis/probes.csv")))
assert [p["probe"] for p in probes] == ["translation"] * 5 + ["shuffle"] + ["rotation"] * 2 + ["scale"] * 2, probes
assert float(probes[0]["consistency"]) == 1.0, probes[0]
assert all(0 <= float(p["accuracy"]) <= 1 and 0 <= float(p["consistency"]) <= 1 for p in probes), probes
assert len(n["probes"]) == len(probes) and "## Bias probes" in page
P
echo "ok: ViT analysis"

"$BIASLAB" analyze resnet --images 8 --probe-images 200 --out resnet_analysis > /dev/null
for f in filters.png receptive_field.png receptive_field.csv analysis.json README.md; do
  [[ -s resnet_analysis/$f ]] || fail "resnet_analysis/$f missing"
done
[[ ! -e resnet_analysis/attention_maps_0.png ]] || fail "a ResNet has no attention maps"
python3 - <<'P' || fail "ResNet receptive field table"
import csv
r = next(csv.DictReader(open("resnet_analysis/receptive_field.csv")))
assert r["stage"] == "layer3" and r["theoretical_px"] == "81", r
assert 1 <= int(r["erf_side_50_px"]) <= int(r["erf_side_90_px"]) <= 28, r
P
echo "ok: ResNet analysis"

# Chosen image files and a chosen query patch.
"$BIASLAB" data export -c "$SRC/configs/fmnist_resnet20.yaml" --set data.train_per_class=1 --out fm > /dev/null
"$BIASLAB" analyze vit --images 4 --probe-images 50 --image fm/test/9_Ankle_boot/000000.png --image fm/test/1_Trouser/000002.png \
  --query 3,2 --out chosen > chosen.out
[[ -s chosen/attention_maps_0.png && -s chosen/attention_maps_1.png && ! -e chosen/attention_maps_2.png ]] \
  || fail "one attention map per chosen image expected: $(ls chosen)"
echo "ok: chosen images and query"
expect_status 2 "--query: expected cls, center or ROW,COL with 0 <= ROW, COL < 7" -- \
  "$BIASLAB" analyze vit --query 7,0 --out bad_query
expect_status 2 "got '3x,1'" -- "$BIASLAB" analyze vit --query 3x,1 --out bad_query
expect_status 3 "nope.png: OpenCV cannot decode this image" -- "$BIASLAB" analyze vit --image nope.png --out bad_image
[[ ! -e bad_query && ! -e bad_image ]] || fail "a refused analysis wrote files"
mkdir keep && echo data > keep/file.txt
expect_status 5 "keep is not empty and is not a biaslab analysis folder" "file.txt" -- "$BIASLAB" analyze vit --out keep
[[ -s keep/file.txt ]] || fail "analyze touched a folder that was not its own"
# A rerun replaces the earlier analysis whole: no stale pictures.
"$BIASLAB" analyze vit --images 4 --show 1 --probe-images 50 > /dev/null
[[ -s vit/analysis/.biaslab-files ]] || fail "the analysis folder has no manifest"
# ...but not once a user has put a file of their own into it.
echo notes > vit/analysis/notes.txt
expect_status 5 "not a biaslab analysis folder" "notes.txt" -- "$BIASLAB" analyze vit --images 4 --show 1
[[ -s vit/analysis/notes.txt ]] || fail "analyze deleted a user's file"
rm vit/analysis/notes.txt
[[ -s vit/analysis/attention_maps_0.png && ! -e vit/analysis/attention_maps_2.png && -z $(compgen -G 'vit/.analysis.partial.*') ]] \
  || fail "the rerun left stale files: $(ls vit/analysis)"
expect_status 2 "--images: expected at least 2" -- "$BIASLAB" analyze vit --images 1
expect_status 2 "--probe-images: expected at least 1, got 0" -- "$BIASLAB" analyze vit --probe-images 0
expect_status 2 "--max-shift: expected 0 or more pixels, got -1" -- "$BIASLAB" analyze vit --max-shift -1
expect_status 2 "--checkpoint: 'worst'" -- "$BIASLAB" analyze vit --checkpoint worst
expect_status 5 "nothing: no such run directory or checkpoint file" -- "$BIASLAB" analyze nothing
expect_status 2 "--out: required" -- "$BIASLAB" analyze vit/checkpoints/best.pt
echo "e2e analyze: all checks passed"
