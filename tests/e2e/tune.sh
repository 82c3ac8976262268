# A tuned sweep end to end: successive halving over four learning rates (eta 2: four
# runs at 1/4 of the budget, two at 1/2), the sweep killed while the second rung runs
# and rerun (the finished rung is not redone, the interrupted run resumes), the seeded
# runs using the choice, the report's tuning section, a tune without a validation
# split refused, and an epoch budget with tune.set's validation split (the recipes).
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
cat > tune.yaml <<'YAML'
name: tiny_tune
base:
  model: {preset: resnet20, widths: [8, 16, 32], layers: [1, 1, 1]}
  data: {preset: fashion_mnist, train_per_class: 30, val_fraction: 0.2, test_fraction: 0.02}
  optim: {name: adamw, lr: 1.0e-3}
  train: {steps: 200, batch_size: 32, log_every: 1000, checkpoint_every: 10, eval_every: 10, eval_batch_size: 256,
          precision: fp32}
  sched: {warmup_steps: 20}
  runtime: {threads: 1}
grid:
  runtime.seed: [0, 1]
tune:
  params:
    optim.lr: [3.0e-4, 1.0e-3, 3.0e-3, 1.0e-2]
  eta: 2
  extend: 0  # the grid's extension: study_methods.sh
YAML
D=runs/sweeps/tiny_tune
T=$D/tune
attempts() { grep -c '^=== biaslab sweep: attempt' "$T/logs/$1.log"; }

out=$("$BIASLAB" sweep -c tune.yaml --dry-run)
grep -q "tune: 1 cell(s) x 4 candidates: 4 at 0.25 of the budget, then 2 at 0.5 of the budget; 2.00 runs' budget" <<<"$out" \
  || fail "dry run: $out"
grep -q "tuning .*seed=1" <<<"$out" || fail "dry run should show the seeded runs waiting for tuning: $out"
[[ ! -e runs ]] || fail "--dry-run wrote files"
expect_status 2 "--emit" "not all decided" -- "$BIASLAB" sweep -c tune.yaml --emit commands

# Killed (SIGKILL) once a rung-1 run has checkpointed.
"$BIASLAB" sweep -c tune.yaml --jobs 1 --threads 1 > first.log 2>&1 &
sweep_pid=$!
# tune.json follows every finished tuning run, not only finished rungs: the first record
# with a finished run must still be mid-rung (with --jobs 1, three rung-0 runs to go).
python3 - "$T/tune.json" > mid_rung.txt <<'PY' &
import json, sys, time
for _ in range(2400):
    try:
        entries = json.load(open(sys.argv[1]))["cells"][0]["entries"]
    except (OSError, ValueError, KeyError, IndexError):
        entries = []
    done = [e for e in entries if e["state"] == "done"]
    if done:
        assert all(isinstance(e["metric"], float) for e in done), done
        rung0 = [e["state"] for e in entries if e["rung"] == 0]
        print(("ok " if len(done) < 4 and "pending" in rung0 else "not mid-rung ") + ",".join(rung0))
        sys.exit(0)
    time.sleep(0.05)
print("no finished run in tune.json")
PY
watcher=$!
# (last.pt is briefly absent while a checkpoint rotates, so the first sighting counts.)
seen=0
for _ in $(seq 1200); do
  compgen -G "$T/runs/all,rung=1,*/checkpoints/last.pt" > /dev/null && { seen=1; break; }
  sleep 0.1
done
[[ $seen == 1 ]] || { cat first.log; fail "no rung-1 run checkpointed"; }
wait $watcher || true
[[ $(cat mid_rung.txt) == ok* ]] || fail "tune.json did not follow the runs of rung 0: $(cat mid_rung.txt)"
kill -9 $sweep_pid
wait $sweep_pid 2>/dev/null || true
sleep 1
rung0=$(ls -d $T/runs/all,rung=0,* | wc -l)
[[ $rung0 == 4 ]] || fail "rung 0 should have four runs, found $rung0"
stamps=$(stat -c %Y.%s $T/runs/all,rung=0,*/summary.json)
[[ ! -e $D/runs/seed=0/summary.json ]] || fail "a seeded run finished before tuning did"

"$BIASLAB" sweep -c tune.yaml --jobs 2 --threads 1 > second.log 2>&1 || { cat second.log; fail "the resumed sweep failed"; }
[[ $(stat -c %Y.%s $T/runs/all,rung=0,*/summary.json) == "$stamps" ]] || fail "a finished rung-0 run was rerun"
for r in $T/runs/all,rung=0,*; do
  [[ $(attempts "$(basename "$r")") == 1 ]] || fail "$(basename "$r") was started again"
done
[[ $(ls -d $T/runs/all,rung=1,* | wc -l) == 2 ]] || fail "rung 1 should have two runs"
resumed=0
for r in $T/runs/all,rung=1,*; do
  python3 -c "import json,sys; sys.exit(0 if json.load(open('$r/meta.json')).get('resumed') else 1)" && resumed=1
done
[[ $resumed == 1 ]] || fail "the interrupted rung-1 run did not resume from its checkpoint"
echo "ok: killed while tuning, resumed without redoing the finished rung"

# The choice: the best rung-1 candidate on best.val_acc; both seeded runs use it.
chosen_lr=$(python3 - "$T/tune.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
cell = t["cells"][0]
rung1 = [e for e in cell["entries"] if e["rung"] == 1]
assert len(rung1) == 2 and all(e["state"] == "done" for e in rung1), rung1
best = max(rung1, key=lambda e: e["metric"])  # ties: the first listed wins
assert cell["chosen"] == best["candidate"], (cell["chosen"], best)
print(cell["chosen_values"]["optim.lr"], repr(float(cell["chosen_values"]["optim.lr"])))
PY
) || fail "tune.json does not hold the best rung-1 candidate"
read -r chosen_lr resolved_lr <<<"$chosen_lr"
for s in 0 1; do
  grep -q "lr: $resolved_lr\$" "$D/configs/seed=$s.yaml" || fail "seed=$s does not use the chosen lr $chosen_lr"
  grep -q '"steps": 200' "$D/runs/seed=$s/summary.json" || fail "seed=$s did not train the full budget"
done
grep -q "steps: 50\$" "$T/configs/all,rung=0,lr=3.0e-4.yaml" || fail "rung 0 should train 1/4 of 200 steps"
echo "ok: seeded runs use the chosen lr=$chosen_lr"

# A rerun does nothing; the report shows the tuning.
"$BIASLAB" sweep -c tune.yaml --threads 1 > third.log 2>&1 || fail "third run failed"
grep -q "tuning: 0 run(s) done" third.log || fail "the third run trained again: $(cat third.log)"
"$BIASLAB" report $D > report.log 2>&1 || { cat report.log; fail "report failed"; }
grep -q "^## Tuning" $D/report/report.md || fail "report.md has no Tuning section"
grep -q "chose \`" $D/report/report.md || fail "report.md does not name the choice"
grep -q "optim.lr=$chosen_lr" $D/report/summary.md || fail "summary.md does not mark the tuned values"
[[ $(grep -c ',yes,[^,]*$' $D/report/tuning.csv) == 2 ]] || fail "tuning.csv should mark the chosen candidate at both rungs"
head -1 $D/report/results.csv | grep -q ',tuned$' || fail "results.csv lacks the tuned column"
echo "ok: report shows the tuning"

# Tuning needs a validation split.
sed 's/ val_fraction: 0.2,//' tune.yaml > noval.yaml
expect_status 2 "no validation split" "data.val_fraction" -- "$BIASLAB" sweep -c noval.yaml --out other

# The recipes' protocol (configs/sweeps/recipes_*.yaml): a budget in epochs, and a
# validation split held out by the tuning runs alone (tune.set), so the seeded run
# trains on every image.
cat > epochs.yaml <<'YAML'
name: tiny_epochs
base:
  model: {preset: resnet20, widths: [8, 16, 32], layers: [1, 1, 1]}
  data: {preset: fashion_mnist, train_per_class: 20, test_fraction: 0.02}
  optim: {name: sgd, lr: 0.05}
  train: {epochs: 3, batch_size: 32, log_every: 1000, eval_batch_size: 256, precision: fp32}
  sched: {warmup_steps: 6}
  runtime: {threads: 1}
grid:
  runtime.seed: [0]
tune:
  params:
    optim.lr: {times: [0.5, 1, 2]}
  extend: 0
  set: {data.val_fraction: 0.2, train.eval_test: final}
YAML
"$BIASLAB" sweep -c epochs.yaml --jobs 2 --threads 1 > epochs.log 2>&1 || { cat epochs.log; fail "the epoch-budget sweep failed"; }
E=runs/sweeps/tiny_epochs
for c in $E/tune/configs/*.yaml; do
  grep -q "epochs: 1\$" "$c" && grep -q "warmup_steps: 2\$" "$c" && grep -q "val_fraction: 0.2\$" "$c" \
    || fail "$c should train 1 of 3 epochs (2 of 6 warm-up steps) with the validation split"
done
[[ $(ls $E/tune/configs/*.yaml | wc -l) == 3 ]] || fail "three tuning runs expected"
grep -q "epochs: 3\$" $E/configs/seed=0.yaml && grep -q "val_fraction: 0.0\$" $E/configs/seed=0.yaml \
  || fail "the seeded run should train 3 epochs on every image: $(grep -E 'epochs|val_fraction' $E/configs/seed=0.yaml)"
python3 - "$E/runs/seed=0/summary.json" <<'PY' || fail "the seeded run's summary"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["data"]["train_size"] == 200, s["data"]
assert "val_acc" not in s["final"], s["final"]
PY
echo "ok: an epoch budget is tuned on a share of the epochs, tune.set's validation split in the tuning runs only"
