# The study protocol end to end (what every shipped study relies on): a validation split
# chooses the best checkpoint and stops training early, never the test set; early
# stopping waits for train.early_stop_min_steps; train.eval_test: final evaluates the
# test set once, at the last evaluation; a run killed while its patience runs resumes
# bitwise; `eval` of best.pt gives the selected epoch and its recorded test accuracy.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
# A tiny ResNet on 200 images with a 100-image validation split, a high learning rate so
# that validation accuracy peaks and wobbles, 10 steps per epoch.
args=(-c "$SRC/configs/fmnist_resnet20.yaml" --set model.widths=[8,16,32] --set model.layers=[1,1,1]
      --set data.train_per_class=20 --set data.val_per_class=10 --set data.test_fraction=0.003
      --set optim.name=adamw --set optim.lr=3.0e-3 --set sched.warmup_steps=5 --set train.batch_size=20
      --set train.epochs=30 --set train.early_stop_patience=3 --set train.early_stop_min_steps=200
      --set train.eval_test=final --set train.checkpoint_every=4 --set train.log_every=1000 --set train.precision=fp32
      --set runtime.threads=1)
train() { local out=$1; shift; "$BIASLAB" train "${args[@]}" --out "$out" "$@"; }
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); [d := d[k] for k in sys.argv[2].split('.')]; print(d)" "$1" "$2"; }

# check_protocol DIR EVAL_TEST: what metrics.csv's validation column implies, by an
# independent simulation of the rules (docs/training.md: best checkpoint, early stopping).
check_protocol() {
  python3 - "$1" "$2" <<'PY'
import csv, json, sys
run, eval_test = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(f"{run}/metrics.csv")))
summary = json.load(open(f"{run}/summary.json"))
patience, min_steps, epochs = 3, 200, 30
assert summary["selection_metric"] == "val_acc", summary["selection_metric"]
val = [float(r["val_acc"]) for r in rows]
assert all(r["val_acc"] != "" for r in rows), "every epoch is evaluated on the validation split"
# Best: the first epoch with the highest validation accuracy (a strict improvement).
best_epoch, best, since, stop_epoch = 0, -1.0, 0, None
for r, v in zip(rows, val):
    if v > best:
        best, best_epoch, since = v, int(r["epoch"]), 0
    else:
        since += 1
    if since >= patience and int(r["step"]) >= min_steps:
        stop_epoch = int(r["epoch"])
        break
expected_last = stop_epoch if stop_epoch is not None else epochs
assert int(rows[-1]["epoch"]) == expected_last, (rows[-1]["epoch"], expected_last, val)
assert summary["best"]["epoch"] == best_epoch, (summary["best"], best_epoch, val)
assert summary["best"]["val_acc"] == best, (summary["best"], best)
assert summary["stopped_early"] == (stop_epoch is not None), summary.get("stopped_early")
tests = [r["test_acc"] for r in rows]
if eval_test == "final":
    assert all(t == "" for t in tests[:-1]) and tests[-1] != "", tests
else:
    assert all(t != "" for t in tests), tests
    test = [float(t) for t in tests]
    by_test = int(rows[test.index(max(test))]["epoch"])
    # Says whether this run could tell selection on validation from selection on test.
    print(f"best by validation: epoch {best_epoch}; by test it would be epoch {by_test}" +
          ("" if by_test != best_epoch else " (this run cannot tell selection on test from selection on validation)"))
# Would patience alone have stopped earlier than the minimum allowed?
since, early = 0, None
best2 = -1.0
for r, v in zip(rows, val):
    since = 0 if v > best2 else since + 1
    best2 = max(best2, v)
    if since >= patience and early is None:
        early = int(r["epoch"])
print(f"stopped at epoch {expected_last} (step {rows[-1]['step']}); patience alone: epoch {early}")
PY
}

train ref > ref.log 2>&1 || { cat ref.log; fail "reference run failed"; }
check_protocol ref final || fail "ref: the best checkpoint or the stop does not follow the validation column"
grep -q "early stopping: no better val_acc" ref.log || fail "the reference run did not stop early: $(tail -3 ref.log)"
echo "ok: best checkpoint and early stop follow the validation split; test evaluated once"

# Killed (SIGKILL) while its patience runs: two steps into the epoch after the best one.
best_epoch=$(json_get ref/summary.json best.epoch)
kill_step=$((best_epoch * 10 + 2))
status=0
BIASLAB_FAULT=kill_after_step:$kill_step train killed > killed.log 2>&1 || status=$?
[[ $status == 137 ]] || { cat killed.log; fail "expected death by SIGKILL (137) at step $kill_step, got $status"; }
train killed >> killed.log 2>&1 || { cat killed.log; fail "the killed run did not resume"; }
grep -q "resuming" killed.log || fail "the second attempt did not resume"
for f in metrics.csv summary.json; do
  cmp -s ref/$f killed/$f || fail "killed/$f differs from the uninterrupted run: $(diff ref/$f killed/$f | head -5)"
done
echo "ok: killed at step $kill_step (mid-patience), resumed bitwise"

# Test every epoch: selection still reads validation only, and eval of best.pt gives
# the best epoch and the test accuracy recorded for it.
train every --set train.eval_test=every > every.log 2>&1 || { cat every.log; fail "the eval_test=every run failed"; }
check_protocol every every || fail "every: the best checkpoint or the stop does not follow the validation column"
"$BIASLAB" eval every --checkpoint best --json > best.json 2>eval.log || { cat eval.log; fail "eval of best.pt failed"; }
best_every=$(json_get every/summary.json best.epoch)
same_value "eval best.pt: epoch" "$(json_get best.json epoch)" "$best_every"
recorded=$(python3 -c "import csv,sys; print(next(r['test_acc'] for r in csv.DictReader(open('every/metrics.csv')) if r['epoch'] == sys.argv[1]))" "$best_every")
python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(0 if abs(a - b) < 1e-6 else 1)" \
  "$(json_get best.json test_acc)" "$recorded" || fail "eval best.pt: test accuracy $(json_get best.json test_acc), recorded at epoch $best_every: $recorded"
echo "ok: eval of best.pt reproduces epoch $best_every and its recorded test accuracy"
