# `biaslab models` lists every preset with its family, parameter count and FLOPs.
source "$(dirname "$0")/lib.sh" "$@"
out=$("$BIASLAB" models)
echo "$out"
for preset in "$SRC"/models/*.yaml; do
  name=$(basename "$preset" .yaml)
  [[ $name == vit_b16 ]] && continue  # 16 px patches do not fit 28 px images
  grep -qE "^$name +(resnet|vit|hybrid) +[0-9]+ +[0-9.]+$" <<<"$out" || fail "preset $name not listed"
done
grep -qE "^resnet20 +resnet +272186 +62\.0$" <<<"$out" || fail "resnet20 parameter count at 1x28x28/10 classes"
grep -qE "^vit_b16 .*not for this input: .*patch size 16 does not divide the image size 28" <<<"$out" \
  || fail "vit_b16 should be listed as not fitting 28 px"
# At ImageNet's input the torchvision-matched presets have torchvision's counts.
big=$("$BIASLAB" models --image-size 224 --channels 3 --classes 1000)
grep -qE "^resnet18 +resnet +11689512 " <<<"$big" || fail "resnet18 at 224"
grep -qE "^resnet50 +resnet +25557032 " <<<"$big" || fail "resnet50 at 224"
grep -qE "^vit_b16 +vit +86567656 " <<<"$big" || fail "vit_b16 at 224"
expect_status 2 "--image-size" -- "$BIASLAB" models --image-size 0
echo PASS
