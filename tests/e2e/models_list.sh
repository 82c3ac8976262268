# `biaslab models` lists every preset with its family and parameter count.
source "$(dirname "$0")/lib.sh" "$@"
out=$("$BIASLAB" models)
echo "$out"
for preset in "$SRC"/models/*.yaml; do
  name=$(basename "$preset" .yaml)
  grep -qE "^$name +(resnet|vit) +[0-9]+" <<<"$out" || fail "preset $name not listed"
done
grep -qE "^resnet20 +resnet +272186$" <<<"$out" || fail "resnet20 parameter count at 1x28x28/10 classes"
