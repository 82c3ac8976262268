# The study methods end to end (docs/sweeps.md, "Regimes and convergence", and
# "Tuning"): a tiny tuned sweep with a budget axis (train.steps 20 and 40, two seeds).
# Each budget is a tuning cell whose two-value lr grid always puts the choice at an end,
# so the tuner tries one value beyond it (tune.extend 1); the report gives every run and
# configuration a regime from the clean training accuracy, and the paired change from 20
# to 40 steps, with "converged" only where that change is within report.converged_delta.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
cat > budget.yaml <<'YAML'
name: tiny_budget
base:
  model: {preset: resnet20, widths: [4, 8, 16], layers: [1, 1, 1]}
  data: {preset: fashion_mnist, train_per_class: 10, val_per_class: 5, test_fraction: 0.02}
  optim: {name: adamw, lr: 1.0e-3}
  train: {steps: 40, batch_size: 25, log_every: 1000, eval_every: 1, eval_batch_size: 256, train_eval_size: 100, precision: fp32}
  sched: {warmup_steps: 2}
  runtime: {threads: 1}
grid:
  train.steps: [20, 40]
  runtime.seed: [0, 1]
tune:
  params:
    optim.lr: [1.0e-4, 1.0e-3]
  eta: 2
  extend: 1
report: {converged_delta: 0.5}
YAML
D=runs/sweeps/tiny_budget
"$BIASLAB" sweep -c budget.yaml --jobs 2 --threads 1 > sweep.log 2>&1 || { cat sweep.log; fail "the sweep failed"; }

# tune.json: per cell (steps=20, steps=40) the two grid runs and one run beyond the end
# the choice was at (0.01 above 1.0e-3, or 1.0e-5 below 1.0e-4: the grid's ratio, 10).
python3 - "$D/tune/tune.json" <<'PY' || fail "tune.json does not show the extensions"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["extend"] == 1, t["extend"]
assert [c["name"] for c in t["cells"]] == ["steps=20", "steps=40"], [c["name"] for c in t["cells"]]
for cell in t["cells"]:
    grid = [e for e in cell["entries"] if "extends" not in e]
    beyond = [e for e in cell["entries"] if "extends" in e]
    assert len(grid) == 2 and all(e["state"] == "done" for e in grid), cell
    assert len(beyond) == 1 and beyond[0]["extends"] == "optim.lr" and beyond[0]["state"] == "done", cell
    best_grid = max(grid, key=lambda e: e["metric"])
    expected = {"lr=1.0e-3": "lr=0.01", "lr=1.0e-4": "lr=1e-05"}[best_grid["candidate"]]
    assert beyond[0]["candidate"] == expected, (best_grid, beyond)
    # The extension is chosen only when strictly better; the choice is then at the new end.
    winner = beyond[0] if beyond[0]["metric"] > best_grid["metric"] else best_grid
    assert cell["chosen"] == winner["candidate"], (cell["chosen"], winner)
    assert bool(cell["at_edge"]) == (winner is beyond[0]), cell["at_edge"]
    print(cell["name"], "chose", cell["chosen"], "tried", beyond[0]["candidate"])
PY
grep -q "steps: 10\$" "$D/tune/configs/steps=20,rung=0,lr=1.0e-4.yaml" || fail "the 20-step cell tunes on 10 steps"
echo "ok: each cell tried one value beyond its grid"

"$BIASLAB" report $D > report.log 2>&1 || { cat report.log; fail "report failed"; }
R=$D/report
grep -q "beyond the grid of optim.lr" $R/report.md || fail "report.md does not show the extensions"
grep -q "2 of 2 cells tried values beyond a grid" $R/report.md || fail "report.md does not count the extensions"
grep -q "^The budget:" $R/summary.md || fail "summary.md has no budget comparison"
grep -q "Regimes (docs/sweeps.md" $R/summary.md || fail "summary.md does not state the regime rule"

# Every finished run has a clean training accuracy and a regime; the budget comparison,
# recomputed here from results.csv, matches budget.csv, and "converged" follows delta.
python3 - "$R" <<'PY' || fail "the regimes or the budget comparison"
import csv, math, os, sys
R = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(R, "results.csv"))))
assert len(rows) == 4, len(rows)
for r in rows:
    assert r["state"] == "done", r
    assert 0 < float(r["final_train_eval_acc"]) <= 1, r
    assert r["regime"] in ("fits", "underfits", "plateau"), r["regime"]
acc = {(r["train.steps"], r["runtime.seed"]): float(r["final_test_acc"]) for r in rows}
diffs = [acc[("40", s)] - acc[("20", s)] for s in ("0", "1")]
budget = list(csv.DictReader(open(os.path.join(R, "budget.csv"))))
assert len(budget) == 1, budget
b = budget[0]
assert (b["budget_key"], b["from"], b["to"], b["n_pairs"]) == ("train.steps", "20", "40", "2"), b
mean = sum(diffs) / 2
assert math.isclose(float(b["change_mean"]), mean, abs_tol=1e-5), (b, diffs)
assert b["converged"] == ("yes" if mean <= 0.5 else "no"), b
summary = {r["train.steps"]: r for r in csv.DictReader(open(os.path.join(R, "summary.csv")))}
assert summary["20"]["converged"] == b["converged"] and summary["40"]["converged"] == "", summary
for s in summary.values():
    assert s["regime"] in ("fits", "underfits", "plateau"), s
    train = [float(r["final_train_eval_acc"]) for r in rows if r["train.steps"] == s["train.steps"]]
    assert math.isclose(float(s["train_eval_acc_mean"]), sum(train) / 2, abs_tol=1e-5), (s, train)
print("change 20 -> 40:", mean, "converged:", b["converged"])
PY
# A stricter delta on the command line: a change above it is not converged.
"$BIASLAB" report $D --converged-delta 0 --out strict > strict.log 2>&1 || { cat strict.log; fail "report --converged-delta failed"; }
mean=$(python3 -c "import csv; print(next(csv.DictReader(open('strict/budget.csv')))['change_mean'])")
verdict=$(python3 -c "import csv; print(next(csv.DictReader(open('strict/budget.csv')))['converged'])")
python3 -c "import sys; sys.exit(0 if (float('$mean') <= 0) == ('$verdict' == 'yes') else 1)" \
  || fail "--converged-delta 0: change $mean gave converged=$verdict"
sed 's/converged_delta: 0.5/converged_delta: 2/' budget.yaml > bad_delta.yaml
expect_status 2 "bad_delta.yaml" "report.converged_delta: expected an accuracy change in [0, 1)" -- \
  "$BIASLAB" sweep -c bad_delta.yaml --dry-run
echo "ok: regimes and the budget comparison"
