# Bad configs and command lines exit with status 2 and name file:line and key,
# before any data is read or any run directory is created.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"

cat > unknown_key.yaml <<'Y'
model: {preset: resnet20}
data: {preset: fashion_mnist}
train:
  epochs: 2
  bacth_size: 64
Y
expect_status 2 "unknown_key.yaml:5" "train.bacth_size" "did you mean 'batch_size'" -- \
  "$BIASLAB" train -c unknown_key.yaml

cat > wrong_type.yaml <<'Y'
model: {preset: resnet20}
data: {preset: fashion_mnist}
optim:
  lr: fast
Y
expect_status 2 "wrong_type.yaml:4" "optim.lr" "expected a number" -- "$BIASLAB" train -c wrong_type.yaml

cat > bad_patch.yaml <<'Y'
model:
  preset: vit_lite_p4
  patch_size: 6
data: {preset: fashion_mnist}
Y
expect_status 2 "bad_patch.yaml:3" "model.patch_size" "does not divide the image size 28" -- \
  "$BIASLAB" train -c bad_patch.yaml

expect_status 2 "--set optim.name=adamm" "did you mean 'adamw'" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set optim.name=adamm
expect_status 2 "missing.yaml" -- "$BIASLAB" train -c missing.yaml
expect_status 2 "data.root" -- "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set data.root=
expect_status 2 "--config (or --resume RUN_DIR) is required" -- "$BIASLAB" train
expect_status 2 "runtime.device" "CUDA" -- "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set runtime.device=cuda:0 --out "$WORK/cuda_run"

# Nothing was created by any of the failures above.
[[ ! -e runs && ! -e cuda_run ]] || fail "a failed config left a run directory behind"

# Bad data: exit 3, the file named.
mkdir -p fake && printf 'garbage' > fake/train-images-idx3-ubyte.gz
expect_status 3 "fake/train-images-idx3-ubyte.gz" -- \
  "$BIASLAB" train -c "$SRC/configs/fmnist_resnet20.yaml" --set data.root=fake --out "$WORK/bad_data"
[[ ! -e bad_data ]] || fail "a failed data load left a run directory behind"
echo "all config error checks passed"
