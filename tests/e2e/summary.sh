# `biaslab summary` prints every stage with shape, parameters, FLOPs and receptive field.
source "$(dirname "$0")/lib.sh" "$@"
cfg="$SRC/configs/fmnist_resnet20.yaml"
out=$("$BIASLAB" summary -c "$cfg")
echo "$out"
grep -qE "^layer2 +32x14x14 +51648 +20\.07 +37$" <<<"$out" || fail "resnet20 layer2 row"
grep -qE "^total +272186 +62\.04$" <<<"$out" || fail "resnet20 total"
# JSON agrees with `biaslab models` and carries per-stage values.
json=$("$BIASLAB" summary -c "$cfg" --json --set model.preset=coatnet_lite)
python3 - "$json" <<'PY' || fail "summary --json"
import json, sys
s = json.loads(sys.argv[1])
assert s["model"] == "coatnet_lite" and s["family"] == "hybrid", s
assert s["parameters"] == sum(st["parameters"] for st in s["stages"]), s
assert s["flops"] == 2 * s["macs"] == sum(st["flops"] for st in s["stages"]), s
names = [st["name"] for st in s["stages"]]
assert names[0] == "patch_embed.backbone.stem" and names[-1] == "head", names
assert s["stages"][names.index("embed")]["output"] == [49, 128], s
assert s["stages"][names.index("blocks.0")]["receptive_field"] == "global", s
PY
models=$("$BIASLAB" models)
grep -qE "^coatnet_lite +hybrid +$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['parameters'])" "$json") " <<<"$models" \
  || fail "models and summary disagree on coatnet_lite"
# Every preset summarises (at an input it fits).
for preset in "$SRC"/models/*.yaml; do
  name=$(basename "$preset" .yaml)
  size=28; [[ $name == vit_b16 ]] && size=32
  "$BIASLAB" summary -c "$cfg" --set model.preset="$name" --set data.image_size=$size >/dev/null || fail "summary of $name"
done
expect_status 2 "model.patch_size" "does not divide" -- "$BIASLAB" summary -c "$cfg" --set model.preset=vit_b16
expect_status 2 "--config is required" -- "$BIASLAB" summary
echo PASS
