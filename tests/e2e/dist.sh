# Data-parallel training with two Gloo ranks on this machine, launched by `--nproc 2`, by
# torchrun --no_python and by hand: the loss trajectory of a LayerNorm ViT matches the
# single-process run, evaluation of the same weights gives the same accuracy, only rank
# 0 writes (each checkpoint once), a killed rank makes the others fail fast, and a killed
# run resumes to the weights of an uninterrupted one. ~1-2 min.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
export OMP_NUM_THREADS=1  # the same BLAS threads under every launcher (torchrun sets 1)
cfg=(-c "$SRC/configs/fmnist_vit_lite.yaml" --set model.depth=2 --set data.train_per_class=32
     --set data.test_fraction=0.05 --set train.epochs=2 --set train.batch_size=32 --set train.eval_batch_size=64
     --set train.log_every=1 --set train.precision=fp32 --set sched.warmup_steps=2 --set runtime.threads=1
     --set train.checkpoint_every=4)
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(eval('d'+sys.argv[2]))" "$@"; }
losses() { grep -v '\[rank ' "$1" | grep -oE 'step [0-9]+/[0-9]+ loss [0-9.]+' | awk '{print $4}'; }
free_port() { python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"; }

BIASLAB_LOG_LEVEL=debug "$BIASLAB" train "${cfg[@]}" --out single 2> single.log
BIASLAB_LOG_LEVEL=debug "$BIASLAB" train "${cfg[@]}" --nproc 2 --out nproc 2> nproc.log

# The same global batches (augmentation included): the running mean loss of every step
# of the first epoch agrees to float tolerance (printed with 4 decimals).
compare_losses() {
  paste <(losses "$1" | head -10) <(losses "$2" | head -10) > pairs.txt
  [[ $(wc -l < pairs.txt) == 10 ]] || fail "fewer than 10 step lines in $1 or $2"
  awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 2e-4) { print "step " NR ": " $1 " vs " $2; bad = 1 } } END { exit bad }' \
    pairs.txt || fail "loss trajectory of $2 differs from $1"
  echo "ok: first 10 step losses of $2 match $1"
}
compare_losses single.log nproc.log
grep -q 'distributed: 2 ranks' nproc.log || fail "no distributed line in nproc.log"
[[ $(json_get nproc/summary.json '["distributed"]["world_size"]') == 2 ]] || fail "summary.json lacks distributed.world_size"
[[ $(json_get nproc/meta.json '["distributed"]["backend"]') == gloo ]] || fail "meta.json lacks the backend"
[[ $(json_get nproc/meta.json '["distributed"]["launcher"]') == "biaslab train --nproc" ]] || fail "meta.json: wrong launcher"

# Evaluation: every test sample once. One process evaluating the same weights reproduces
# the accuracy the two ranks recorded, exactly.
"$BIASLAB" eval nproc --checkpoint last --json > eval.json
python3 - <<'P' || fail "single-process evaluation of the distributed run's weights differs"
import json
r = json.load(open("eval.json")); s = json.load(open("nproc/summary.json"))
assert r["test_acc"] == s["final"]["test_acc"], (r, s["final"])
assert abs(r["test_loss"] - s["final"]["test_loss"]) < 1e-9, (r, s["final"])
P
echo "ok: eval of the distributed weights reproduces their recorded accuracy"

# Only rank 0 writes: every checkpoint write is logged once, by rank 0, as often as the
# single-process run writes it; the run directories hold the same files.
grep 'checkpoint .* written' nproc.log | grep -q 'rank 1' && fail "rank 1 wrote a checkpoint"
grep -q '\[rank 1\]' nproc.log || fail "rank 1 logged nothing at debug level (the write check would be empty)"
diff <(grep -oE 'checkpoint [^ ]+ written \(step [0-9]+\)' single.log | sed 's|single/||') \
     <(grep -oE 'checkpoint [^ ]+ written \(step [0-9]+\)' nproc.log | sed 's|nproc/||') \
  || fail "checkpoint writes differ from the single-process run"
[[ $(grep -c 'checkpoint .* written' nproc.log) -ge 8 ]] || fail "too few checkpoint writes logged"
# (TensorBoard's events file is named after the writing process: compared by prefix.)
files() { (cd "$1" && find . -type f ! -name '*.lock' | sed 's/tfevents\..*/tfevents.*/' | sort); }
diff <(files single) <(files nproc) \
  || fail "the distributed run directory holds other files"
echo "ok: checkpoints written once, by rank 0"

# torchrun --no_python, as a user runs it (Debian's torchrun 1.13 under Python 3.11 needs
# --redirects/--tee values other than its default 0).
TORCHRUN=$(dirname "${BIASLAB_PYTHON:-/usr/bin/python3}")/torchrun
[[ -x $TORCHRUN ]] || TORCHRUN=$(command -v torchrun || true)
if [[ -n $TORCHRUN ]]; then
  "$TORCHRUN" --redirects 1 --tee 2 --no_python --nproc_per_node 2 --master_port "$(free_port)" \
    "$BIASLAB" train "${cfg[@]}" --out torchrun 2> torchrun.log || fail "torchrun run failed: $(tail -20 torchrun.log)"
  compare_losses single.log torchrun.log
  [[ $(json_get torchrun/meta.json '["distributed"]["launcher"]') == torchrun ]] || fail "torchrun run: wrong launcher"
  same_value "the final weights of the torchrun and --nproc runs" \
    "$(json_get torchrun/summary.json '["weights_fingerprint"]')" "$(json_get nproc/summary.json '["weights_fingerprint"]')"
  echo "ok: torchrun --no_python gives the --nproc run's weights bitwise"
else
  skip "torchrun not found next to ${BIASLAB_PYTHON:-/usr/bin/python3} nor on PATH"
fi

# A killed rank: the other fails within seconds (not after the timeout), the launcher
# reports which rank died; rerunning resumes to the uninterrupted run's weights, with
# drop-path on (its masks are drawn per rank and step, not from a saved RNG state).
dp=(--set model.drop_path_rate=0.2)
"$BIASLAB" train "${cfg[@]}" "${dp[@]}" --nproc 2 --out uninterrupted 2> uninterrupted.log
start=$(date +%s)
status=0
BIASLAB_FAULT=kill_after_step:13 BIASLAB_FAULT_RANK=1 "$BIASLAB" train "${cfg[@]}" "${dp[@]}" --nproc 2 --out killed \
  2> killed.log || status=$?
elapsed=$(( $(date +%s) - start ))
[[ $status == 137 ]] || fail "killed rank: exit $status, expected 137: $(tail -5 killed.log)"
grep -q 'rank 0 of 2: .* failed' killed.log || fail "rank 0 did not report the lost rank: $(tail -5 killed.log)"
grep -q 'rank 1 was killed by signal 9' killed.log || fail "the launcher did not name the dead rank"
(( elapsed < 60 )) || fail "the killed run took ${elapsed}s to stop"
echo "ok: a killed rank stops the run in ${elapsed}s"
"$BIASLAB" train "${cfg[@]}" "${dp[@]}" --nproc 2 --out killed 2> resumed.log
grep -q 'resuming killed from .*(step 12' resumed.log || fail "no resume from step 12: $(grep -i resum resumed.log)"
same_value "the final weights of the resumed and the uninterrupted distributed runs" \
  "$(json_get killed/summary.json '["weights_fingerprint"]')" "$(json_get uninterrupted/summary.json '["weights_fingerprint"]')"
echo "ok: the killed distributed run resumed to the uninterrupted run's weights"

# SIGTERM to the --nproc launcher (as a scheduler sends it): passed to the ranks, which
# agree on the step to stop at; rank 0 writes `last`; status 75; meta.json records the
# command as typed (with --nproc), so rerunning it resumes.
"$BIASLAB" train "${cfg[@]}" --set train.epochs=200 --nproc 2 --out stopped 2> stopped.log &
launcher=$!
for _ in $(seq 600); do grep -q 'step 5/' stopped.log && break; sleep 0.1; done
kill -TERM $launcher
status=0; wait $launcher || status=$?
[[ $status == 75 ]] || fail "SIGTERM to the launcher: exit $status, expected 75: $(tail -5 stopped.log)"
grep -q 'stopped by signal 15 at step' stopped.log || fail "no stop message: $(tail -5 stopped.log)"
[[ -s stopped/checkpoints/last.pt ]] || fail "no checkpoint after SIGTERM"
grep -q '"command": ".*--nproc 2' stopped/meta.json || fail "meta.json lacks the typed command: $(grep command stopped/meta.json)"
echo "ok: SIGTERM to the launcher stops all ranks with a checkpoint (exit 75)"

# Ranks started by hand (no launcher to stop them): rank 0 hosts the store and fails on
# its own when rank 1 dies.
port=$(free_port)
for r in 0 1; do
  WORLD_SIZE=2 RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port BIASLAB_FAULT=kill_after_step:5 BIASLAB_FAULT_RANK=1 \
    "$BIASLAB" train "${cfg[@]}" --out manual 2> manual$r.log &
  eval "pid$r=$!"
done
start=$(date +%s)
s0=0; wait "$pid0" || s0=$?
s1=0; wait "$pid1" || s1=$?
elapsed=$(( $(date +%s) - start ))
[[ $s1 == 137 && $s0 == 7 ]] || fail "manual launch: rank 0 exit $s0 (expected 7), rank 1 exit $s1 (expected 137): $(tail -3 manual0.log)"
grep -q 'another rank stopped' manual0.log || fail "rank 0's error does not explain: $(tail -3 manual0.log)"
(( elapsed < 60 )) || fail "rank 0 took ${elapsed}s to notice"
echo "ok: without a launcher, rank 0 fails on its own in ${elapsed}s (exit 7)"

# Ranks launched with different configs stop before anything is written (status 2), the
# odd rank naming the difference.
port=$(free_port)
for r in 0 1; do
  lr=(); [[ $r == 1 ]] && lr=(--set optim.lr=0.01)
  WORLD_SIZE=2 RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port "$BIASLAB" train "${cfg[@]}" "${lr[@]}" \
    --out mismatch 2> mismatch$r.log &
  eval "pid$r=$!"
done
s0=0; wait "$pid0" || s0=$?
s1=0; wait "$pid1" || s1=$?
[[ $s0 == 2 && $s1 == 2 ]] || fail "mismatched ranks: exit $s0 / $s1, expected 2 / 2: $(tail -2 mismatch1.log)"
grep -q "rank 1 would train another experiment than rank 0 (in optim: rank 0 '  lr: 0.001', this rank '  lr: 0.01')" mismatch1.log \
  || fail "rank 1 does not name the difference: $(tail -2 mismatch1.log)"
[[ ! -e mismatch ]] || fail "mismatched ranks created the run directory"
echo "ok: ranks with different configs refuse to train together (exit 2)"

# A distributed run resumes single-process (and vice versa): same global batch, same plan.
BIASLAB_FAULT=kill_after_step:13 BIASLAB_FAULT_RANK=1 "$BIASLAB" train "${cfg[@]}" --nproc 2 --out mixed \
  2> /dev/null && fail "the killed run succeeded"
"$BIASLAB" train "${cfg[@]}" --out mixed 2> mixed.log
grep -q 'resuming mixed from .*(step 12' mixed.log || fail "single-process resume of a 2-rank run: $(tail -3 mixed.log)"
python3 - <<'P' || fail "the mixed run's history is incomplete"
import json
s = json.load(open("mixed/summary.json")); m = json.load(open("mixed/meta.json"))
assert s["steps"] == 20, s["steps"]
assert m["distributed"]["world_size"] == 2 and m["resumed"][-1]["distributed"] is None, m
P
echo "ok: a 2-rank run resumed in a single process"

# Bad input: every rank stops with the same clear error before training.
expect_status 2 "--nproc" -- "$BIASLAB" train "${cfg[@]}" --nproc 0 --out bad
expect_status 2 "runtime.dist_backend: nccl needs CUDA" -- "$BIASLAB" train "${cfg[@]}" --nproc 2 \
  --set runtime.dist_backend=nccl --out bad
expect_status 2 "train.batch_size: 1 is the global batch" -- "$BIASLAB" train "${cfg[@]}" --nproc 2 \
  --set train.batch_size=1 --out bad
expect_status 2 "WORLD_SIZE='x'" -- env WORLD_SIZE=x "$BIASLAB" train "${cfg[@]}" --out bad
expect_status 2 "already a rank" -- env WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
  "$BIASLAB" train "${cfg[@]}" --nproc 2 --out bad
# A failure of rank 0 alone (its run directory is locked) stops rank 1 with rank 0's status.
mkdir -p locked
python3 -c "import fcntl, sys, time
f = open('locked/.lock', 'w'); fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(120)" > lock.out &
lock_pid=$!
for _ in $(seq 100); do grep -q locked lock.out && break; sleep 0.1; done
expect_status 5 "is in use by another biaslab process" "rank 0 stopped before training" -- \
  env BIASLAB_LOG_LEVEL=info "$BIASLAB" train "${cfg[@]}" --nproc 2 --out locked
kill $lock_pid 2>/dev/null || true

# Final weights, 1 rank against 2, where they must agree to rounding: plain SGD (a
# summed instead of averaged all-reduce doubles every update; AdamW's running-mean loss
# above is blind to that), fp32, no dropout, no label smoothing.
PYTHON=${BIASLAB_PYTHON:-/usr/bin/python3}
sgd=("${cfg[@]}" --set optim.name=sgd --set optim.lr=0.05 --set optim.momentum=0 --set optim.weight_decay=0
     --set train.label_smoothing=0 --set model.drop_rate=0)
"$BIASLAB" train "${sgd[@]}" --out sgd1 > sgd1.log 2>&1 || { cat sgd1.log; fail "SGD single-process run failed"; }
"$BIASLAB" train "${sgd[@]}" --nproc 2 --out sgd2 > sgd2.log 2>&1 || { cat sgd2.log; fail "SGD two-rank run failed"; }
acc1=$(json_get sgd1/summary.json '["final"]["test_acc"]')
acc2=$(json_get sgd2/summary.json '["final"]["test_acc"]')
size=$(json_get sgd1/summary.json '["data"]["test_size"]')
python3 -c "import sys; a, b, n = map(float, sys.argv[1:]); sys.exit(0 if abs(a - b) <= 1 / n + 1e-12 else 1)" \
  "$acc1" "$acc2" "$size" || fail "final test accuracy: 1 rank $acc1, 2 ranks $acc2 (more than one image apart)"
if "$PYTHON" -c "import torch" 2>/dev/null; then
  for n in 1 2; do
    "$BIASLAB" export sgd$n --format state_dict --out sgd$n.pt > /dev/null 2>&1 || fail "export of sgd$n"
  done
  "$PYTHON" - <<'P' || fail "final weights of 1 and 2 ranks differ by more than 1e-5 (relative)"
import torch
a = torch.load("sgd1.pt", weights_only=True)
b = torch.load("sgd2.pt", weights_only=True)
assert a.keys() == b.keys(), set(a) ^ set(b)
worst = max(((x - b[k]).norm() / x.norm().clamp_min(1e-12)).item() for k, x in a.items() if x.is_floating_point())
print(f"largest relative difference of a tensor: {worst:.2e}")
assert worst <= 1e-5, worst
P
  echo "ok: plain SGD, 1 rank and 2 ranks: the same final weights (relative 1e-5) and test accuracy"
else
  skip "the 1-vs-2-rank weights comparison ($PYTHON has no torch; install python3-torch)"
  echo "ok: plain SGD, 1 rank and 2 ranks: the same final test accuracy ($acc1)"
fi

# The scaling benchmark at a tiny size: its JSON is consistent (no timing assertions).
python3 "$SRC/scripts/bench_scaling.py" --quick --configs configs/fmnist_vit_lite.yaml --biaslab "$BIASLAB" \
  --cores 2 --json scaling.json > scaling.txt || fail "bench_scaling.py failed: $(tail -5 scaling.txt)"
python3 - <<'P' || fail "bench_scaling.py JSON inconsistent"
import json
d = json.load(open("scaling.json"))
(r,) = d["results"]
assert r["ranks"] == 2 and r["threads_per_rank"] == 1, r
ref, multi, thr = r["reference"]["images_per_s"], r["ranks_run"]["images_per_s"], r["threads_run"]["images_per_s"]
assert min(ref, multi, thr) > 0, r
assert abs(r["efficiency"] - multi / (2 * ref)) < 1e-12, r
assert abs(r["ranks_vs_threads"] - multi / thr) < 1e-12, r
assert "--nproc 2" in r["ranks_run"]["command"] and "--nproc" not in r["reference"]["command"], r
P
grep -q 'fmnist_vit_lite.yaml' scaling.txt || fail "no table row: $(cat scaling.txt)"
echo "ok: bench_scaling.py --quick"
echo "PASS"
