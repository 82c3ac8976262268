# Crash and resume: a run killed with SIGKILL at several points (mid-epoch, just after
# a checkpoint, at an epoch boundary, inside a checkpoint write), or stopped by SIGTERM,
# and then rerun with the same command ends with metrics.csv, summary.json and
# checkpoints bitwise identical to an uninterrupted run. Also: corrupt checkpoints,
# a changed config, a completed run, and the non-finite guard.
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
# A tiny ViT with dropout (global RNG), augmentation (per-batch RNG), a validation
# split, EMA and top-k, 9 steps per epoch, a checkpoint every 4 steps.
args=(-c "$SRC/configs/fmnist_vit_lite.yaml" --set model.depth=1 --set model.embed_dim=32 --set model.num_heads=2
      --set model.drop_rate=0.1 --set data.train_per_class=33 --set data.val_fraction=0.01 --set data.test_fraction=0.03
      --set train.batch_size=32 --set train.epochs=3 --set train.checkpoint_every=4 --set train.ema_decay=0.9
      --set train.save_top_k=2 --set sched.warmup_steps=3 --set runtime.threads=2 --set train.log_every=3
      --set train.precision=fp32)
train() { local out=$1; shift; "$BIASLAB" train "${args[@]}" --out "$out" "$@"; }
# Weights are compared through their fingerprints (summary.json holds the final ones,
# eval prints those of best.pt); checkpoint files are not byte-reproducible because
# LibTorch keys optimizer state by tensor addresses.
fingerprint() { "$BIASLAB" eval "$1" --checkpoint "$2" --json 2>/dev/null | python3 -c "import json,sys; print(json.load(sys.stdin)['weights_fingerprint'])"; }
# metrics_steps.csv without its measured column (images_per_s).
step_rows() { cut -d, -f1-6,8 "$1/metrics_steps.csv"; }
same_as_reference() {
  local dir=$1
  for f in metrics.csv summary.json; do
    cmp -s ref/$f "$dir/$f" || fail "$dir/$f differs from the uninterrupted run"
  done
  # Unless train.log_every changed on resume, the per-step rows are the same too.
  [[ ${2:-} == log_every_changed ]] || diff <(step_rows ref) <(step_rows "$dir") ||
    fail "$dir/metrics_steps.csv differs from the uninterrupted run"
  same_value "$dir: best.pt weights against the uninterrupted run's" "$(fingerprint "$dir" best)" "$ref_best"
  echo "ok: $dir is bitwise identical to the uninterrupted run"
}

train ref > ref.log 2>&1 || { cat ref.log; fail "reference run failed"; }
[[ $(grep -c . ref/metrics.csv) == 4 ]] || fail "reference run has $(grep -c . ref/metrics.csv) metrics lines"
# 30 steps, a row every 3: steps 3..30.
[[ $(grep -c . ref/metrics_steps.csv) == 11 ]] || fail "reference metrics_steps.csv: $(cat ref/metrics_steps.csv)"
ls ref/checkpoints/epoch-*.pt | wc -l | grep -qx 2 || fail "save_top_k=2 did not keep two epoch checkpoints"
grep -q '"weights_fingerprint"' ref/summary.json || fail "summary.json lacks the weights fingerprint"
ref_best=$(fingerprint ref best)
same_value "last.pt's weights against the fingerprint in summary.json" "$(fingerprint ref last)" \
  "$(python3 -c "import json; print(json.load(open('ref/summary.json'))['weights_fingerprint'])")"

# Each fault kills the first attempt; the same command then resumes and finishes.
for fault in kill_after_step:6 kill_after_step:8 kill_after_step:9 kill_after_step:18 kill_in_checkpoint:3; do
  dir=run_${fault/:/_}
  status=0
  BIASLAB_FAULT=$fault train "$dir" > "$dir.log" 2>&1 || status=$?
  [[ $status == 137 ]] || { cat "$dir.log"; fail "$fault: expected death by SIGKILL (137), got $status"; }
  train "$dir" >> "$dir.log" 2>&1 || { cat "$dir.log"; fail "$fault: resume failed"; }
  grep -q "resuming" "$dir.log" || fail "$fault: the second run did not resume"
  same_as_reference "$dir"
done

# Killed twice.
status=0; BIASLAB_FAULT=kill_after_step:5 train twice > twice.log 2>&1 || status=$?
[[ $status == 137 ]] || fail "twice: first kill"
status=0; BIASLAB_FAULT=kill_after_step:14 train twice >> twice.log 2>&1 || status=$?
[[ $status == 137 ]] || fail "twice: second kill"
train twice >> twice.log 2>&1 || fail "twice: resume"
same_as_reference twice

# Where/how keys may change on resume (here log_every; likewise data.root, threads, device).
status=0; BIASLAB_FAULT=kill_after_step:5 train moved > moved.log 2>&1 || status=$?
[[ $status == 137 ]] || fail "moved: kill"
"$BIASLAB" train --resume moved --set train.log_every=7 >> moved.log 2>&1 || { cat moved.log; fail "moved: resume"; }
same_as_reference moved log_every_changed
# Rows every 3 steps up to the checkpoint at step 4 the resume started from, every 7
# after, and at the last step.
[[ $(cut -d, -f1 moved/metrics_steps.csv | tr '\n' ' ') == "step 3 7 14 21 28 30 " ]] ||
  fail "moved/metrics_steps.csv steps: $(cut -d, -f1 moved/metrics_steps.csv | tr '\n' ' ')"

# Resumed elsewhere: the data at another path, another thread count, the device named.
# Not bitwise (a thread count changes reduction order), but the run resumes from its
# checkpoint at step 8 and finishes all 30 steps; until then `runs` calls it resumable.
status=0; BIASLAB_FAULT=kill_after_step:9 train elsewhere > elsewhere.log 2>&1 || status=$?
[[ $status == 137 ]] || { cat elsewhere.log; fail "elsewhere: kill"; }
"$BIASLAB" runs . --csv > runs.csv || fail "runs after the kill"
row=$(grep '^elsewhere,' runs.csv) || fail "runs lists no 'elsewhere': $(cat runs.csv)"
python3 - "$row" <<'P' || fail "runs: the killed run should be resumable at step 8: $row"
import csv, sys
r = next(csv.reader([sys.argv[1]]))
assert (r[4], r[6]) == ("8", "resumable"), r
P
ln -s "$(python3 -c "import sys; print(sys.argv[1])" /usr/share/datasets/fashion-mnist)" fmnist_elsewhere
"$BIASLAB" train --resume elsewhere --set data.root="$WORK/fmnist_elsewhere" --set runtime.threads=1 \
  --set runtime.device=cpu >> elsewhere.log 2>&1 || { cat elsewhere.log; fail "elsewhere: resume"; }
grep -q "resuming" elsewhere.log || fail "elsewhere: the second attempt did not resume"
python3 - <<'P' || fail "elsewhere: the resumed run's summary"
import json
s = json.load(open("elsewhere/summary.json"))
assert s["steps"] == 30 and s["threads"] == 1, (s["steps"], s["threads"])
P
grep -q "fmnist_elsewhere" elsewhere/config.yaml || fail "elsewhere: config.yaml does not record the data's new root"
diff <(head -3 ref/metrics_steps.csv | cut -d, -f1-6) <(head -3 elsewhere/metrics_steps.csv | cut -d, -f1-6) \
  || fail "elsewhere: the steps before the checkpoint differ from the uninterrupted run's"
echo "ok: resumed with the data moved, one thread and the device named"

# SIGTERM: finishes the step, writes a checkpoint, exits 75; the rerun resumes.
status=0; BIASLAB_FAULT=sigterm_after_step:11 train term > term.log 2>&1 || status=$?
[[ $status == 75 ]] || { cat term.log; fail "SIGTERM: expected exit 75, got $status"; }
grep -q "stopped by signal 15 at step 11" term.log || fail "SIGTERM message"
"$BIASLAB" train --resume term >> term.log 2>&1 || fail "--resume after SIGTERM"
same_as_reference term

# A corrupt last.pt: resume falls back to the previous good checkpoint.
status=0; BIASLAB_FAULT=kill_after_step:13 train corrupt > corrupt.log 2>&1 || status=$?
[[ $status == 137 ]] || fail "corrupt: kill"
printf '\xff\xff\xff\xff' | dd of=corrupt/checkpoints/last.pt bs=1 seek=4000 conv=notrunc status=none
train corrupt >> corrupt.log 2>&1 || { cat corrupt.log; fail "corrupt: resume"; }
grep -q "skipping unusable checkpoint.*last.pt: checksum mismatch" corrupt.log || fail "corrupt: no warning"
same_as_reference corrupt

# Every checkpoint corrupt: a clear error, exit 5, nothing trained.
BIASLAB_FAULT=kill_after_step:10 train broken > broken.log 2>&1 || true
for f in broken/checkpoints/*.pt; do printf 'junk' > "$f"; done
expect_status 5 "no usable checkpoint" "bad magic" -- train broken

# --resume of a run killed before its first checkpoint: exit 5, and nothing deleted.
BIASLAB_FAULT=kill_after_step:2 train early > early.log 2>&1 || true
expect_status 5 "no checkpoint to resume from" -- "$BIASLAB" train --resume early
[[ -s early/config.yaml ]] || fail "--resume deleted the run it could not resume"
expect_status 2 "--set values change the run's config" -- "$BIASLAB" train --resume ref --set optim.lr=0.5

# The same folder with a different config is refused; a complete run is left alone.
expect_status 2 "holds a run of a different config" "optim" -- train ref --set optim.lr=0.01
before=$(md5sum ref/*.* ref/checkpoints/*)
expect_status 0 "already complete" -- train ref
# ... on a machine too small to train it too: the memory check is for runs that will train.
expect_status 0 "already complete" -- train ref --set runtime.max_memory_gb=0.001
expect_status 2 "runtime.max_memory_gb allows" -- train small_machine --set runtime.max_memory_gb=0.001
[[ $(md5sum ref/*.* ref/checkpoints/*) == "$before" ]] || fail "a complete run was modified"

# Non-finite guard: abort names the step and writes nothing after it; skip counts.
expect_status 4 "non-finite loss at step 7 (epoch 1, batch 7)" "no checkpoint was written after it" -- \
  env BIASLAB_FAULT=nan_loss_at_step:7 "$BIASLAB" train "${args[@]}" --set train.checkpoint_every=1 --out nan_abort
"$BIASLAB" eval nan_abort --checkpoint last --json > nan_abort.json 2>/dev/null || true
python3 - <<'P' || fail "the last checkpoint of an aborted run is not the step before the NaN"
import json; r = json.load(open("nan_abort.json")); assert r["step"] == 6, r
P
env BIASLAB_FAULT=nan_loss_at_step:7 "$BIASLAB" train "${args[@]}" --set train.nonfinite=skip --out nan_skip > nan_skip.log 2>&1 \
  || { cat nan_skip.log; fail "skip policy run failed"; }
python3 - <<'P' || fail "skipped steps not recorded"
import json; s = json.load(open("nan_skip/summary.json")); assert s["skipped_steps"] == 1, s
P
# bf16 (the studies' precision) resumes bitwise too, where the CPU computes it natively;
# emulated bf16 (AVX2 only) is ~40x slower and skipped.
if grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo; then
  bf16=(--set train.precision=bf16 --set train.epochs=2)
  train bf16_ref "${bf16[@]}" > bf16_ref.log 2>&1 || { cat bf16_ref.log; fail "bf16 reference run failed"; }
  grep -q '"precision": "bf16"' bf16_ref/meta.json || fail "the bf16 run did not record bf16: $(grep precision bf16_ref/meta.json)"
  status=0
  BIASLAB_FAULT=kill_after_step:10 train bf16_killed "${bf16[@]}" > bf16_killed.log 2>&1 || status=$?
  [[ $status == 137 ]] || { cat bf16_killed.log; fail "bf16: expected death by SIGKILL (137), got $status"; }
  train bf16_killed "${bf16[@]}" >> bf16_killed.log 2>&1 || { cat bf16_killed.log; fail "bf16: resume failed"; }
  for f in metrics.csv summary.json; do
    cmp -s bf16_ref/$f bf16_killed/$f || fail "bf16: $f differs from the uninterrupted run"
  done
  echo "ok: a bf16 run killed at step 10 resumes bitwise"
else
  allowed_skip "bf16 resume: this CPU has no native bf16 (avx512_bf16 or amx_bf16)"
fi
echo "resume and reliability end-to-end passed"
