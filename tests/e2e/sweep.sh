# biaslab sweep and report end to end: a tiny sweep with one failing configuration,
# killed midway and rerun (finished runs are not rerun, the interrupted run resumes,
# failures are recorded and retried only on request), a changed sweep file refused,
# the emitted command reproducing a run, the Slurm script, the directory lock, and
# the report's files.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
cat > sweep.yaml <<'YAML'
name: tiny
base:
  model: {preset: resnet20}
  data: {preset: fashion_mnist, train_per_class: 20, test_fraction: 0.05}
  optim: {name: adamw, lr: 1.0e-3}
  train: {steps: 20, batch_size: 32, log_every: 1000, checkpoint_every: 5, precision: fp32}
  runtime: {threads: 1}
variants:
  model:
    cnn: {model.widths: [8, 16, 32], model.layers: [1, 1, 1]}
    vit: {model.preset: vit_lite_p4, model.depth: 1, model.embed_dim: 32, model.num_heads: 2, train.steps: 300}
    broken: {model.widths: [8, 16, 32], model.layers: [1, 1, 1], data.root: /nonexistent/fashion-mnist}
grid:
  runtime.seed: [0, 1]
YAML
D=runs/sweeps/tiny
state() { python3 -c "import json,sys; print(json.load(open('$D/ledger.json'))['runs']['$1']['state'])"; }
attempts() { grep -c '^=== biaslab sweep: attempt' "$D/logs/$1.log"; }

# --dry-run lists the six runs and writes nothing.
out=$("$BIASLAB" sweep -c sweep.yaml --dry-run)
grep -q "sweep tiny: 6 runs" <<<"$out" || fail "dry run: $out"
grep -q "model=vit,seed=1" <<<"$out" || fail "dry run lacks model=vit,seed=1: $out"
[[ ! -e runs ]] || fail "--dry-run wrote files"

# First attempt: killed with SIGKILL while model=vit,seed=0 runs (after a checkpoint).
"$BIASLAB" sweep -c sweep.yaml --jobs 1 --threads 1 > first.log 2>&1 &
sweep_pid=$!
for _ in $(seq 600); do
  [[ -f $D/runs/model=vit,seed=0/checkpoints/last.pt ]] && break
  sleep 0.1
done
[[ -f $D/runs/model=vit,seed=0/checkpoints/last.pt ]] || { cat first.log; fail "model=vit,seed=0 never checkpointed"; }
kill -9 $sweep_pid
wait $sweep_pid 2>/dev/null || true
[[ $(state model=vit,seed=0) == running ]] || fail "the ledger should still say running for the killed sweep's run"
# The orphaned run is told to stop (parent-death signal) and exits after its checkpoint.
run_pid=$(python3 -c "import json; print(json.load(open('$D/ledger.json'))['runs']['model=vit,seed=0']['pid'])")
for _ in $(seq 300); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$run_pid" 2>/dev/null && fail "the run of the killed sweep kept running"
[[ ! -f $D/runs/model=vit,seed=0/summary.json ]] || fail "model=vit,seed=0 finished before the kill; the test needs it interrupted"
cnn0_summary=$(stat -c %Y.%s "$D/runs/model=cnn,seed=0/summary.json")

# Rerun: finished runs skipped, the interrupted one resumed, the broken ones failed.
status=0
"$BIASLAB" sweep -c sweep.yaml --jobs 2 --threads 1 > second.log 2>&1 || status=$?
[[ $status == 6 ]] || { cat second.log; fail "a sweep with failed runs should exit 6, got $status"; }
grep -q "left 'running' by a sweep that died" second.log || fail "the dead sweep's run was not detected"
[[ $(stat -c %Y.%s "$D/runs/model=cnn,seed=0/summary.json") == "$cnn0_summary" ]] || fail "a finished run was rerun"
[[ $(attempts model=cnn,seed=0) == 1 ]] || fail "model=cnn,seed=0 was started again"
python3 -c "import json,sys; m=json.load(open('$D/runs/model=vit,seed=0/meta.json')); sys.exit(0 if m.get('resumed') else 1)" \
  || fail "model=vit,seed=0 did not resume from its checkpoint"
for r in model=cnn,seed=0 model=cnn,seed=1 model=vit,seed=0 model=vit,seed=1; do
  [[ $(state $r) == done ]] || fail "$r is $(state $r), expected done"
done
for r in model=broken,seed=0 model=broken,seed=1; do
  [[ $(state $r) == failed ]] || fail "$r is $(state $r), expected failed"
  python3 - "$D/ledger.json" "$r" <<'PY' || fail "$r: ledger lacks exit status 3 and the reason"
import json, sys
e = json.load(open(sys.argv[1]))["runs"][sys.argv[2]]
sys.exit(0 if e["exit_status"] == 3 and "data error" in e["reason"] and "/nonexistent" in e["reason"] else 1)
PY
done
echo "ok: killed sweep rerun: finished runs kept, interrupted run resumed, failures recorded"

# A third run does nothing; --retry-failed tries the failed runs again.
status=0
"$BIASLAB" sweep -c sweep.yaml --threads 1 > third.log 2>&1 || status=$?
[[ $status == 6 ]] || fail "third run: exit $status"
[[ $(attempts model=broken,seed=0) == 1 && $(attempts model=vit,seed=1) == 1 ]] || fail "third run started runs"
status=0
"$BIASLAB" sweep -c sweep.yaml --threads 1 --retry-failed > retry.log 2>&1 || status=$?
[[ $status == 6 && $(attempts model=broken,seed=0) == 2 && $(attempts model=cnn,seed=1) == 1 ]] \
  || fail "--retry-failed should rerun exactly the failed runs (exit $status)"
echo "ok: --retry-failed"

# Another sweep holding the directory is refused.
hold_lock "$D/.lock"
expect_status 5 "in use by another biaslab sweep" -- "$BIASLAB" sweep -c sweep.yaml
release_lock

# A changed sweep file is refused; --force adopts it and restarts only the changed runs.
sed 's/train_per_class: 20/train_per_class: 21/' sweep.yaml > changed.yaml
expect_status 2 "different sweep definition" "train_per_class" -- "$BIASLAB" sweep -c changed.yaml --out $D
# --dry-run says so too (exit 0, nothing written) and marks the runs that would start over.
tree_sums() { find "$D" -type f | sort | xargs -r md5sum; }
before=$(tree_sums)
expect_status 0 "refused without --force" "different sweep definition" "train_per_class" "changed      model=cnn,seed=0" \
  -- "$BIASLAB" sweep -c changed.yaml --out $D --dry-run
[[ $(tree_sums) == "$before" ]] || fail "--dry-run wrote into $D"
sed 's/steps: 300}/steps: 301}/' sweep.yaml > vit_changed.yaml
status=0
"$BIASLAB" sweep -c vit_changed.yaml --out $D --force --threads 1 > force.log 2>&1 || status=$?
[[ $status == 6 ]] || { cat force.log; fail "--force run: exit $status"; }
[[ -d $D/discarded/model=vit,seed=0 && $(attempts model=cnn,seed=0) == 1 ]] \
  || fail "--force should set aside and rerun only the runs whose config changed"
grep -q '"steps": 301' "$D/runs/model=vit,seed=1/summary.json" || fail "the changed run was not rerun"
echo "ok: changed sweep refused, --force restarts only the changed runs"

# The emitted command reproduces a run.
cmd=$("$BIASLAB" sweep -c vit_changed.yaml --out $D --emit commands | grep "model=cnn,seed=1")
[[ $cmd == *"train -c "*"/configs/model=cnn,seed=1.yaml --out "* ]] || fail "unexpected command: $cmd"
eval "${cmd%% --out *} --out again" > again.log 2>&1 || { cat again.log; fail "the emitted command failed"; }
for k in weights_fingerprint final; do
  a=$(python3 -c "import json; print(json.load(open('again/summary.json'))['$k'])")
  b=$(python3 -c "import json; print(json.load(open('$D/runs/model=cnn,seed=1/summary.json'))['$k'])")
  [[ $a == "$b" ]] || fail "the emitted command gave $k $a, the sweep $b"
done
echo "ok: the emitted command reproduces the run bitwise"

# A run directory in use by another process is refused too.
hold_lock "$D/runs/model=cnn,seed=1/.lock"
read -ra train_cmd <<<"${cmd%% --out *}"
expect_status 5 "is in use by another biaslab process" -- "${train_cmd[@]}" --out "$D/runs/model=cnn,seed=1"
release_lock

# Slurm array job.
"$BIASLAB" sweep -c vit_changed.yaml --out $D --emit slurm --cpus-per-task 3 > slurm.log
grep -q -- "--array=0-5" $D/sweep.slurm && grep -q -- "--cpus-per-task=3" $D/sweep.slurm || fail "sweep.slurm: $(cat $D/sweep.slurm)"
[[ $(wc -l < $D/commands.txt) == 6 ]] || fail "commands.txt should have 6 lines"
bash -n $D/sweep.slurm || fail "sweep.slurm is not valid bash"
echo "ok: --emit slurm"

# Report.
"$BIASLAB" report $D > report.log 2>&1 || { cat report.log; fail "report failed"; }
for f in results.csv summary.csv summary.md report.md bars.png curves.png; do
  [[ -s $D/report/$f ]] || fail "report did not write $f"
done
[[ $(head -c 8 $D/report/bars.png | od -An -tx1 | tr -d ' \n') == 89504e470d0a1a0a ]] || fail "bars.png is not a PNG"
[[ $(grep -c . $D/report/results.csv) == 7 ]] || fail "results.csv should have a header and 6 rows"
grep -q "^\"model=broken,seed=0\",broken,0,failed," $D/report/results.csv || fail "results.csv: failed run row: $(cat $D/report/results.csv)"
grep -q "| cnn | resnet |" $D/report/summary.md || fail "summary.md: $(cat $D/report/summary.md)"
expect_status 5 "no plan.json" -- "$BIASLAB" report "$WORK"
# Another metric is reported beside the sweep's own report, which stays as it was.
before=$(md5sum $D/report/summary.md)
"$BIASLAB" report $D --metric final.test_top5_acc > top5.log 2>&1 || { cat top5.log; fail "report --metric failed"; }
grep -q "final test top5 accuracy (%)" $D/report-final.test_top5_acc/summary.md \
  || fail "report-final.test_top5_acc/summary.md: $(head -5 $D/report-final.test_top5_acc/summary.md)"
[[ $(md5sum $D/report/summary.md) == "$before" ]] || fail "report --metric changed the sweep's own report"
expect_status 2 "--metric" "expected final.<accuracy> or best.<accuracy>" -- "$BIASLAB" report $D --metric final.test_loss
# Another series: the seed key is refused by name; a swept key reports beside the sweep's own.
expect_status 2 "--series runtime.seed: is a seed" -- "$BIASLAB" report $D --series runtime.seed
expect_status 2 "--series model.depth: not a swept key" -- "$BIASLAB" report $D --series model.depth
"$BIASLAB" report $D --series model --metric final.test_top5_acc > by.log 2>&1 || { cat by.log; fail "report --series failed"; }
[[ -s $D/report-final.test_top5_acc-by-model/summary.csv ]] || fail "report --series --metric: $(cat by.log)"
[[ $(md5sum $D/report/summary.md) == "$before" ]] || fail "report --series changed the sweep's own report"
echo "ok: report"

# Compare: another sweep with the same seeds, paired run by run with the first one's arms.
cat > other.yaml <<'YAML'
name: other
base:
  model: {preset: resnet20, widths: [8, 16, 32], layers: [1, 1, 1]}
  data: {preset: fashion_mnist, train_per_class: 20, test_fraction: 0.05}
  optim: {name: adamw, lr: 3.0e-3}
  train: {steps: 20, batch_size: 32, log_every: 1000, precision: fp32}
  runtime: {threads: 1}
grid:
  runtime.seed: [0, 1]
YAML
"$BIASLAB" sweep -c other.yaml --out runs/sweeps/other --threads 1 > other.log 2>&1 || { cat other.log; fail "second sweep failed"; }
"$BIASLAB" compare $D runs/sweeps/other --out cmp > compare.log 2>&1 || { cat compare.log; fail "compare failed"; }
for f in compare.md arms.csv pairs.csv; do [[ -s cmp/$f ]] || fail "compare did not write $f"; done
# The paired difference, recomputed from the runs' summary.json files.
want=$(python3 - "$D" <<'PY'
import json, sys
acc = lambda d: json.load(open(d + "/summary.json"))["final"]["test_acc"]
diffs = [acc(f"runs/sweeps/other/runs/seed={s}") - acc(f"{sys.argv[1]}/runs/model=cnn,seed={s}") for s in (0, 1)]
print(f"other,cnn,2,{sum(diffs) / 2:.6g}")
PY
)
grep -q "^$want," cmp/pairs.csv || fail "pairs.csv lacks '$want': $(cat cmp/pairs.csv)"
grep -q "^other,broken,0," cmp/pairs.csv || fail "the failed runs should give no pair: $(cat cmp/pairs.csv)"
grep -q "^- tiny: model=broken,seed=0 (failed)" cmp/compare.md || fail "compare.md does not list the failed runs: $(cat cmp/compare.md)"
# Its reproduce line, run from the output folder, writes the same files.
line=$(grep -o 'biaslab compare [^`]*' cmp/compare.md)
[[ $line == "biaslab compare ../$D ../runs/sweeps/other --metric final.test_acc --out ." ]] || fail "reproduce line: $line"
cp -r cmp cmp_before
(cd cmp && "$BIASLAB" ${line#biaslab } > /dev/null) || fail "the reproduce line failed: $line"
diff -r cmp cmp_before > /dev/null || fail "the reproduce line wrote other files: $(diff -r cmp cmp_before | head)"
expect_status 5 "is not a biaslab comparison folder" -- "$BIASLAB" compare $D runs/sweeps/other --out $D
expect_status 2 "given twice" -- "$BIASLAB" compare $D $D
expect_status 2 "--metric" -- "$BIASLAB" compare $D runs/sweeps/other --metric final.test_loss
echo "ok: compare"
