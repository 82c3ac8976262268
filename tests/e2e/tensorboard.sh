# TensorBoard event files: a run killed mid-epoch and resumed writes one events file whose
# curves are continuous (no step twice) and equal to metrics_steps.csv / metrics.csv, with
# the same steps as an uninterrupted run, and the hparams session records; read back by
# the tensorboard package (PyPI). Skipped when the build has no TensorBoard support or no
# Python with tensorboard is found.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
PY=""
for p in "$SRC/.venv-torch/bin/python" "${BIASLAB_PYTHON:-}" "$SRC/.venv-tensorboard/bin/python" python3; do
  if [[ -n $p ]] && "$p" -c "import tensorboard" 2>/dev/null; then PY=$p; break; fi
done
args=(-c "$SRC/configs/fmnist_resnet20.yaml" --set data.train_per_class=20 --set data.test_fraction=0.02 --set train.precision=fp32
      --set data.val_fraction=0.01 --set train.epochs=3 --set train.batch_size=20 --set train.log_every=4
      --set train.checkpoint_every=3 --set model.widths=[8,16,32] --set model.layers=[1,1,1] --set runtime.threads=2)
"$BIASLAB" train "${args[@]}" --out ref > ref.log 2>&1 || { cat ref.log; fail "reference run failed"; }
if grep -q "built without TensorBoard support" ref.log; then
  [[ ! -e ref/tensorboard ]] || fail "a build without TensorBoard wrote ref/tensorboard"
  allowed_skip "this biaslab was built without TensorBoard support (warned, no event files)"
  exit 0
fi
ls ref/tensorboard/events.out.tfevents.* > /dev/null || fail "no events file in ref/tensorboard"
status=0
BIASLAB_FAULT=kill_after_step:11 "$BIASLAB" train "${args[@]}" --out killed > killed.log 2>&1 || status=$?
[[ $status == 137 ]] || { cat killed.log; fail "expected death by SIGKILL, got $status"; }
"$BIASLAB" train "${args[@]}" --out killed >> killed.log 2>&1 || { cat killed.log; fail "resume failed"; }
grep -q resuming killed.log || fail "the second run did not resume"
[[ $(ls killed/tensorboard | wc -l) == 1 ]] || fail "the resumed run did not continue its events file: $(ls killed/tensorboard)"
# train.tensorboard: false writes none.
"$BIASLAB" train "${args[@]}" --set train.epochs=1 --set train.tensorboard=false --out off > off.log 2>&1 || fail "off"
[[ ! -e off/tensorboard ]] || fail "train.tensorboard: false wrote off/tensorboard"
if [[ -z $PY ]]; then
  skip "reading the events back (no Python with the tensorboard package; scripts/setup.sh installs .venv-tensorboard)"
  exit 0
fi
for run in ref killed; do "$PY" "$SRC/tests/python/check_tensorboard.py" $run || fail "$run: events differ from the CSV files"; done
"$PY" - <<'P' || fail "the resumed run's curves differ from the uninterrupted run's"
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
runs = {}
for name in ("ref", "killed"):
    ea = EventAccumulator(f"{name}/tensorboard", size_guidance={"scalars": 0})
    ea.Reload()
    runs[name] = {t: [(e.step, e.value) for e in ea.Scalars(t)] for t in ea.Tags()["scalars"]}
assert runs["ref"].keys() == runs["killed"].keys(), (runs["ref"].keys(), runs["killed"].keys())
for tag, ref in runs["ref"].items():
    got = runs["killed"][tag]
    if tag == "train/images_per_s":  # measured
        assert [s for s, _ in got] == [s for s, _ in ref], tag
    else:
        assert got == ref, (tag, got, ref)
print(f"resumed run: {len(runs['ref'])} curves equal to the uninterrupted run's")
P
echo "tensorboard end-to-end passed"
