# Adversarial input: what a careless user, a broken disk or a hostile file can hand
# biaslab. Every case must end quickly with the documented exit status and a message
# that names the offending file, key or value, and must leave alone whatever biaslab
# did not write itself. Classes:
#   1 never delete what biaslab did not write      5 special files (FIFO, directory)
#   2 run names stay inside the runs folder        6 nonsense values are errors
#   3 corrupt gzip data                            7 messages say what happened
#   4 bounds (size, count, memory)                 8 leftovers of dead processes, late signals
# Each class runs in its own subshell from $WORK: a failed check prints FAIL and ends
# its class; the other classes still run and the script exits 1 at the end.
#   BIASLAB_ADV_CLASSES="3 5"   run only these classes (the shared fixtures are built anyway)
#   BIASLAB_ADV_KEEP_GOING=1    a failed check does not end its class (for working on fixes)
source "$(dirname "$0")/lib.sh" "$@"
cd "$WORK"
# A regression (a huge allocation, an endless read) must fail instead of eating the
# machine. 6 GiB of address space is plenty for these tiny runs (LibTorch and OpenBLAS
# reserve a lot of virtual memory up front, far less than this).
# (Measured: the tiny trainings below still work under 1 GiB.)
ulimit -v $((6 * 1024 * 1024))
export BIASLAB_HOME=$SRC
unset BIASLAB_FAULT BIASLAB_FAULT_RANK
PY=${BIASLAB_PYTHON:-/usr/bin/python3}  # a Python with torch, for one optional fixture check
FM=/usr/share/datasets/fashion-mnist
# Every command that could hang runs under timeout; -k: SIGKILL 5 s later, since biaslab
# handles the first SIGTERM itself (and may not get to handle it while blocked).
B=(timeout -k 5 20 "$BIASLAB")
# The few real trainings the fixtures need (a few seconds each) get more room on a loaded machine.
BT=(timeout -k 5 120 "$BIASLAB")

# --- helpers -------------------------------------------------------------------------
die() { echo "FAIL: $*" >&2; exit 1; }  # a broken fixture: ends the class (or the script) in any mode
if [[ ${BIASLAB_ADV_KEEP_GOING:-0} == 1 ]]; then
  eval "lib_$(declare -f expect_status)"
  fail() { echo "FAIL: $*" >&2; echo x >> "$WORK/.failures"; }
  expect_status() {
    ( fail() { echo "FAIL: $*" >&2; echo x >> "$WORK/.failures"; exit 1; }; lib_expect_status "$@" ) || true
  }
fi
# capture FILE CMD...: runs CMD, keeping its output in FILE too (for checks of what it must not say).
capture() { local f=$1 s=0; shift; "$@" > "$f" 2>&1 || s=$?; cat "$f"; return "$s"; }
lacks() { ! grep -qF -- "$2" "$1" || fail "the output should not contain '$2': $(cat "$1")"; }
# snap PATH: every entry under a folder (type and name, hidden ones included) and every
# file's hash; or a file's hash.
snap() {
  if [[ -d $1 ]]; then
    (cd "$1" && find . -mindepth 1 -printf '%y %p\n' | sort && find . -type f -exec sha256sum {} + | sort)
  else
    sha256sum "$1"
  fi
}
# untouched PATH CODE PATTERN... -- CMD...: expect_status, then PATH is exactly as before
# and nothing was added next to it.
untouched() {
  local path=$1; shift
  local before around
  before=$(snap "$path")
  around=$(ls -A "$(dirname "$path")")
  expect_status "$@"
  [[ $(snap "$path") == "$before" ]] || fail "$path was changed (< before, > after): $(diff <(echo "$before") <(snap "$path"))"
  [[ $(ls -A "$(dirname "$path")") == "$around" ]] || fail "something was added next to $path: $(ls -A "$(dirname "$path")")"
  echo "ok: $path untouched"
}
# A user's own folder whose names look like a run's.
user_folder() {
  mkdir -p "$1/checkpoints" "$1/export"
  echo "my notes, not a checkpoint" > "$1/checkpoints/notes.txt"
  head -c 4096 /dev/urandom > "$1/export/model.bin"
  echo "my own log" > "$1/train.log"
  printf 'x,y\n1,2\n' > "$1/data.csv"
}
# A folder with the four Fashion-MNIST files, for swapping one of them.
fmnist_copy() {
  mkdir -p "$1"
  cp "$FM"/train-labels-idx1-ubyte.gz "$FM"/t10k-images-idx3-ubyte.gz "$FM"/t10k-labels-idx1-ubyte.gz "$1"/
}

# --- shared fixtures -----------------------------------------------------------------
# A tiny ViT (one epoch of six steps) and its TorchScript export; a small PNG.
cat > tiny.yaml <<'Y'
model: {preset: vit_lite_p4, depth: 1, embed_dim: 32, num_heads: 2}
data: {preset: fashion_mnist, train_per_class: 20, test_fraction: 0.02}
optim: {name: adamw, lr: 1.0e-3}
sched: {name: cosine, warmup_steps: 2}
train: {epochs: 1, batch_size: 32, precision: fp32, log_every: 1000}
runtime: {threads: 1, seed: 0}
Y
TINY=$WORK/tiny.yaml
"${BT[@]}" train -c tiny.yaml --out base > base.log 2>&1 || { cat base.log; die "fixture: the tiny training failed"; }
[[ -s base/summary.json && -s base/checkpoints/best.pt ]] || die "fixture: base run incomplete"
BASE_STEPS=$(python3 -c "import json; print(json.load(open('base/summary.json'))['steps'])")
"${B[@]}" export base --out base.pt > export.log 2>&1 || { cat export.log; die "fixture: export failed"; }
python3 - <<'P'
import struct, zlib
w = h = 28
raw = b"".join(b"\0" + bytes((3 * x + 7 * y) % 256 for x in range(w)) for y in range(h))
def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xffffffff)
open("img.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
P
expect_status 0 "img.png" -- "${B[@]}" predict base.pt img.png
echo "ok: fixtures: tiny run ($BASE_STEPS steps), base.pt, img.png"

# --- class 1: never delete what biaslab did not write (exit 5, the folder named) ----------
class1() {
  mkdir c1 && cd c1
  user_folder u_train
  untouched u_train 5 "u_train" "not a biaslab" -- "${B[@]}" train -c "$TINY" --out u_train
  untouched u_train 5 "u_train" "not a biaslab" -- "${B[@]}" train -c "$TINY" --out u_train --force

  # A real run directory with the user's files in it: --force starts over, the user's files stay.
  cp -a "$WORK/base" run_mine
  mkdir -p run_mine/export
  echo "mine 1" > run_mine/mine.txt
  echo "mine 2" > run_mine/checkpoints/mine.txt
  echo "mine 3" > run_mine/export/mine.txt
  local mine
  mine=$(sha256sum run_mine/mine.txt run_mine/checkpoints/mine.txt run_mine/export/mine.txt)
  expect_status 0 -- "${BT[@]}" train -c "$TINY" --out run_mine --force
  [[ $(sha256sum run_mine/mine.txt run_mine/checkpoints/mine.txt run_mine/export/mine.txt 2>&1) == "$mine" ]] \
    || fail "train --force deleted or changed the user's files in run_mine"
  [[ -s run_mine/summary.json && -s run_mine/checkpoints/best.pt ]] || fail "train --force did not retrain run_mine"
  echo "ok: train --force kept the user's files in a run directory"

  echo "my own text, not an archive" > u_file.txt
  untouched u_file.txt 5 "u_file.txt" "not a biaslab" -- "${B[@]}" export "$WORK/base" --out u_file.txt
  expect_status 0 -- "${B[@]}" export "$WORK/base" --out new_export.pt
  [[ -s new_export.pt ]] || fail "export --out new_export.pt wrote nothing"

  # data export of 28 synthetic images (Fashion-MNIST would be 70,000 files whatever the subset).
  printf 'model: {preset: resnet20}\ndata: {preset: synth_texture, train_size: 20, test_size: 8}\n' > synth.yaml
  user_folder u_data
  untouched u_data 5 "u_data" "not a biaslab" -- "${B[@]}" data export -c synth.yaml --out u_data
  untouched u_data 5 "u_data" "not a biaslab" -- "${B[@]}" data export -c synth.yaml --out u_data --force
  # ... while biaslab's own export is replaced with --force, and its own analysis folder rewritten.
  expect_status 0 -- "${B[@]}" data export -c synth.yaml --out own_data
  expect_status 2 "own_data" "already exists" "--force" -- "${B[@]}" data export -c synth.yaml --out own_data
  expect_status 0 -- "${B[@]}" data export -c synth.yaml --out own_data/ --force   # a trailing slash too
  [[ -s own_data/dataset.yaml && -z $(compgen -G 'own_data/.*partial*') ]] || fail "data export --out own_data/ misplaced its folder"

  user_folder u_analyze
  untouched u_analyze 5 "u_analyze" "not a biaslab" -- \
    "${B[@]}" analyze "$WORK/base" --out u_analyze --images 2 --show 1
  expect_status 0 -- "${B[@]}" analyze "$WORK/base" --out own_analysis --images 2 --show 1
  expect_status 0 -- "${B[@]}" analyze "$WORK/base" --out own_analysis --images 2 --show 1

  cat > sweep.yaml <<Y
name: adv_sweep
base: $TINY
set: {train.steps: 2}
grid:
  runtime.seed: [0, 1]
Y
  "${BT[@]}" sweep -c sweep.yaml --out sweepdir --jobs 1 --threads 1 > sweep.log 2>&1 \
    || { cat sweep.log; die "fixture: the tiny sweep failed"; }
  user_folder u_report
  untouched u_report 5 "u_report" "not a biaslab" -- "${B[@]}" report sweepdir --out u_report
  expect_status 0 -- "${B[@]}" report sweepdir --out own_report
  expect_status 0 -- "${B[@]}" report sweepdir --out own_report
  user_folder u_sweep
  untouched u_sweep 5 "u_sweep" "not a biaslab" -- "${B[@]}" sweep -c sweep.yaml --out u_sweep --dry-run
  untouched u_sweep 5 "u_sweep" "not a biaslab" -- "${B[@]}" sweep -c sweep.yaml --out u_sweep --jobs 1 --threads 1
}

# --- class 2: run names stay inside the runs folder (exit 2, "name") ---------------------
class2() {
  mkdir c2 && cd c2
  { printf 'name: ..\n'; cat "$TINY"; } > dotdot.yaml
  { printf 'name: %s\n' "$WORK/abs_name"; cat "$TINY"; } > absolute.yaml  # absolute, but inside $WORK
  { printf 'name: a/b\n'; cat "$TINY"; } > slash.yaml
  { printf 'name: ""\n'; cat "$TINY"; } > empty.yaml
  { printf 'name: "a\tb"\n'; cat "$TINY"; } > tab.yaml        # a raw tab inside the quotes
  { printf 'name: "a\\nb"\n'; cat "$TINY"; } > newline.yaml   # YAML's \n escape
  { printf 'name: a\xff\xfeb\n'; cat "$TINY"; } > utf8.yaml   # raw bytes 0xff 0xfe: invalid UTF-8
  grep -q $'\t' tab.yaml && ! iconv -f UTF-8 -t UTF-8 utf8.yaml > /dev/null 2>&1 || die "fixture: name files"
  local before f
  before=$(ls -A)
  for f in dotdot absolute slash empty tab newline utf8; do
    expect_status 2 "name" -- "${B[@]}" train -c $f.yaml
  done
  expect_status 2 "name" -- "${B[@]}" train -c "$TINY" --set name=..
  [[ $(ls -A) == "$before" && ! -e runs && ! -e "$WORK/abs_name" && ! -e "$WORK/runs" ]] \
    || fail "a refused run name created something: $(ls -A) $(ls -A "$WORK")"
  echo "ok: no run directory was created"
}

# --- class 3: corrupt gzip (exit 3, the file named) -------------------------------------
class3() {
  mkdir c3 && cd c3
  fmnist_copy flip
  fmnist_copy crc
  python3 - "$FM/train-images-idx3-ubyte.gz" <<'P'
import sys
data = open(sys.argv[1], "rb").read()
flip = bytearray(data); flip[len(flip) // 2] ^= 0xFF          # inside the deflate data
open("flip/train-images-idx3-ubyte.gz", "wb").write(flip)
crc = bytearray(data); crc[-6] ^= 0x01                        # the CRC-32 of the trailer only
open("crc/train-images-idx3-ubyte.gz", "wb").write(crc)
P
  ! gzip -t flip/train-images-idx3-ubyte.gz 2>/dev/null || die "fixture: the flipped byte left a valid gzip"
  ! gzip -t crc/train-images-idx3-ubyte.gz 2>/dev/null || die "fixture: the CRC change left a valid gzip"
  cmp -s <(gzip -dc crc/train-images-idx3-ubyte.gz 2>/dev/null) <(gzip -dc "$FM/train-images-idx3-ubyte.gz") \
    || die "fixture: the CRC-only change should decompress to the original"
  expect_status 3 "flip/train-images-idx3-ubyte.gz" -- \
    "${B[@]}" train -c "$TINY" --set data.root="$PWD/flip" --out run_flip
  expect_status 3 "crc/train-images-idx3-ubyte.gz" -- \
    "${B[@]}" train -c "$TINY" --set data.root="$PWD/crc" --out run_crc
  [[ ! -e run_flip && ! -e run_crc ]] || fail "a data error left a run directory behind"
}

# --- class 4: bounds, refused quickly, naming the file or key ---------------------------
class4() {
  mkdir c4 && cd c4
  # "Billion laughs": 9 levels of 9 aliases (9^9 scalars if expanded), once under
  # data.class_names and once as the name.
  python3 - <<'P'
defs = ["&l0 [" + ", ".join(["lol"] * 9) + "]"]
defs += [f"&l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]" for i in range(1, 9)]
model = "model: {preset: vit_lite_p4, depth: 1, embed_dim: 32, num_heads: 2}\n"
open("laughs_data.yaml", "w").write(model + "data:\n  preset: fashion_mnist\n  class_names:\n    -\n"
                                    + "".join(f"      - {d}\n" for d in defs))
open("laughs_name.yaml", "w").write("name:\n" + "".join(f"  - {d}\n" for d in defs) + model)
P
  expect_status 2 "laughs_data.yaml" -- "${B[@]}" train -c laughs_data.yaml --out run_laughs
  expect_status 2 "laughs_name.yaml" -- "${B[@]}" train -c laughs_name.yaml --out run_laughs

  expect_status 2 "/dev/zero" -- "${B[@]}" train -c /dev/zero --out run_zero
  { cat "$TINY"; python3 -c "print('# a comment line that only makes this config file large\n' * 60000, end='')"; } > big.yaml
  (( $(stat -c %s big.yaml) > 3 * 1000 * 1000 )) || die "fixture: big.yaml is too small"
  expect_status 2 "big.yaml" -- "${B[@]}" train -c big.yaml --out run_big
  { echo "model: {preset: /dev/zero}"; tail -n +2 "$TINY"; } > zero_preset.yaml
  expect_status 2 "/dev/zero" -- "${B[@]}" train -c zero_preset.yaml --out run_zero_preset

  expect_status 2 "memory" -- "${B[@]}" train -c "$SRC/configs/fmnist_vit_lite.yaml" --set model.depth=10000 \
    --set data.train_per_class=20 --set data.test_fraction=0.02 --set train.epochs=1 --set runtime.threads=1 --out run_deep
  expect_status 2 "train.batch_size" -- "${B[@]}" train -c "$TINY" --set train.batch_size=1000000000000 --out run_batch

  cat > huge_sweep.yaml <<Y
name: huge
base: $TINY
grid:
  optim.lr: [1.0e-4, 2.0e-4, 3.0e-4, 4.0e-4, 5.0e-4, 6.0e-4, 7.0e-4, 8.0e-4, 9.0e-4, 1.0e-3]
  optim.weight_decay: [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]
  sched.warmup_steps: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  train.label_smoothing: [0.0, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09]
  data.subset_seed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
  runtime.seed: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]
Y
  expect_status 2 "runs" -- "${B[@]}" sweep -c huge_sweep.yaml --dry-run
  [[ ! -e runs ]] || fail "sweep --dry-run wrote files"

  # IDX headers that promise 2^27 images of 16x16 (32 GiB) in a 1 KiB file, plain and gzip.
  fmnist_copy huge_plain
  fmnist_copy huge_gz
  python3 - <<'P'
import gzip, struct
data = struct.pack(">IIII", 0x803, 1 << 27, 16, 16) + bytes(1008)
open("huge_plain/train-images-idx3-ubyte", "wb").write(data)
open("huge_gz/train-images-idx3-ubyte.gz", "wb").write(gzip.compress(data))
P
  expect_status 3 "huge_plain/train-images-idx3-ubyte" -- "${B[@]}" train -c "$TINY" --set data.root="$PWD/huge_plain" \
    --set data.train_images=train-images-idx3-ubyte --out run_huge
  expect_status 3 "huge_gz/train-images-idx3-ubyte.gz" -- "${B[@]}" train -c "$TINY" --set data.root="$PWD/huge_gz" \
    --out run_huge
  [[ ! -e run_huge ]] || fail "a data error left a run directory behind"

  # An export archive whose biaslab/meta.json claims image_size 1000000 (a 10^12-pixel
  # input); every other entry of the zip copied as it is. The same rewrite without the
  # change must still be a working archive (checks the fixture).
  local size
  for size in keep 1000000; do
    python3 - "$WORK/base.pt" "archive_$size.pt" "$size" <<'P'
import json, sys, zipfile
src, dst, size = sys.argv[1:]
found = False
with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
    for info in zin.infolist():
        data = zin.read(info.filename)
        if info.filename.endswith("/extra/biaslab/meta.json"):
            meta = json.loads(data)
            assert meta["image_size"] == 28, meta
            if size != "keep":
                meta["image_size"] = int(size)
            data = json.dumps(meta).encode()
            found = True
        zout.writestr(info, data)
assert found, "no extra/biaslab/meta.json in " + src
P
  done
  expect_status 0 "img.png" -- "${B[@]}" predict archive_keep.pt "$WORK/img.png"
  if "$PY" -c "import torch" 2>/dev/null; then
    "$PY" - <<'P' || die "fixture: Python does not read image_size 1000000 from archive_1000000.pt"
import json, torch
files = {"biaslab/meta.json": ""}
torch.jit.load("archive_1000000.pt", _extra_files=files)
assert json.loads(files["biaslab/meta.json"])["image_size"] == 1000000
P
  fi
  expect_status 5 "archive_1000000.pt" "image_size" -- "${B[@]}" predict archive_1000000.pt "$WORK/img.png"
}

# --- class 5: special files refused at once, saying what they are -----------------------
class5() {
  mkdir c5 && cd c5
  mkfifo fifo.yaml fifo_preset.yaml fifo.png
  mkdir dir.yaml
  expect_status 2 "fifo.yaml" "FIFO" -- "${B[@]}" train -c fifo.yaml
  expect_status 2 "dir.yaml" "directory" -- "${B[@]}" train -c dir.yaml
  expect_status 2 "fifo.yaml" "FIFO" -- "${B[@]}" sweep -c fifo.yaml --dry-run
  { echo "model: {preset: fifo_preset.yaml}"; tail -n +2 "$TINY"; } > with_fifo_preset.yaml
  expect_status 2 "fifo_preset.yaml" "FIFO" -- "${B[@]}" train -c with_fifo_preset.yaml --out run_preset
  expect_status 3 "fifo.png" "FIFO" -- "${B[@]}" predict "$WORK/base.pt" fifo.png
  fmnist_copy idx_fifo
  mkfifo idx_fifo/train-images-idx3-ubyte.gz
  expect_status 3 "train-images-idx3-ubyte.gz" "FIFO" -- \
    "${B[@]}" train -c "$TINY" --set data.root="$PWD/idx_fifo" --out run_fifo
  [[ ! -e runs && ! -e run_preset && ! -e run_fifo ]] || fail "a refused input left a run directory behind"
}

# --- class 6: nonsense values are errors (exit 2, the key or option named) ---------------
class6() {
  mkdir c6 && cd c6
  expect_status 2 "train.steps" -- "${B[@]}" train -c "$TINY" --set train.steps=0 --out run_steps
  expect_status 2 "--threads" -- "${B[@]}" predict "$WORK/base.pt" "$WORK/img.png" --threads -4
  expect_status 2 "--steps" -- capture bench.out "${B[@]}" bench -c "$TINY" --steps 0
  lacks bench.out "1.79e308"
  lacks bench.out "e+308"
  expect_status 2 "data.mean" -- "${B[@]}" train -c "$TINY" --set 'data.mean=[.nan]' --set 'data.std=[0.35]' --out run_nan
  expect_status 2 "BIASLAB_FAULT" -- env BIASLAB_FAULT=bogus "${B[@]}" train -c "$TINY" --out run_fault
  [[ ! -e runs && ! -e run_steps && ! -e run_nan && ! -e run_fault ]] || fail "a refused value left a run directory behind"
}

# --- class 7: messages say what happened -------------------------------------------------
class7() {
  mkdir c7 && cd c7
  # (a) A checkpoint of another model in place of best.pt: eval says the configs differ.
  cp -a "$WORK/base" run_a
  "${BT[@]}" train -c "$TINY" --set model.embed_dim=64 --set model.num_heads=4 --out run_b > run_b.log 2>&1 \
    || { cat run_b.log; die "fixture: run_b failed"; }
  cp run_b/checkpoints/best.pt run_a/checkpoints/best.pt
  expect_status 5 "config" "differs" -- "${B[@]}" eval run_a

  # (b) config.yaml edited by hand in a stopped run: --resume names config.yaml, not --set.
  local status=0
  BIASLAB_FAULT=sigterm_after_step:3 "${BT[@]}" train -c "$TINY" --set train.epochs=2 --out stopped > stopped.log 2>&1 \
    || status=$?
  [[ $status == 75 && -s stopped/checkpoints/last.pt ]] || { cat stopped.log; die "fixture: the stopped run (exit $status)"; }
  sed -i 's/^\(  lr: \).*/\10.5/' stopped/config.yaml
  grep -q '^  lr: 0.5$' stopped/config.yaml || die "fixture: could not edit lr in stopped/config.yaml"
  expect_status 2 "config.yaml" -- capture resume.out "${B[@]}" train --resume stopped
  lacks resume.out "--set values"
}

# --- class 8: leftovers of dead processes, and a signal at the very end ------------------
class8() {
  mkdir c8 && cd c8
  # (a) Temporary files of a writer that died (pid 999999) go; those of a live one ($$) stay.
  local dead=999999
  while kill -0 $dead 2>/dev/null || [[ -e /proc/$dead ]]; do dead=$((dead + 1)); done
  cp -a "$WORK/base" run
  local f stale=() live=()
  for f in .config.yaml.tmp export/.best.pt.tmp checkpoints/.last.pt.tmp; do
    mkdir -p "run/$(dirname "$f")"
    echo partial > "run/$f.$dead"; stale+=("run/$f.$dead")
    echo partial > "run/$f.$$"; live+=("run/$f.$$")
  done
  expect_status 0 -- "${B[@]}" export run
  expect_status 0 "already complete" -- "${B[@]}" train -c "$TINY" --out run
  for f in "${stale[@]}"; do [[ ! -e $f ]] || fail "$f of dead pid $dead was left behind"; done
  for f in "${live[@]}"; do [[ -e $f ]] || fail "$f of the live pid $$ was removed"; done
  echo "ok: stale temporaries removed, a live process's kept"

  # (b) SIGTERM after the last step (during the final evaluation and writes): either it
  # stops with a checkpoint (75) or it finishes (0) and says it saw the signal.
  local status=0
  BIASLAB_FAULT=sigterm_after_step:$BASE_STEPS "${B[@]}" train -c "$TINY" --out term_last > term_last.out 2>&1 || status=$?
  if [[ $status == 75 ]]; then
    [[ -s term_last/checkpoints/last.pt ]] || fail "exit 75 without term_last/checkpoints/last.pt"
  elif [[ $status == 0 ]]; then
    grep -qis "sigterm\|signal" term_last.out term_last/train.log \
      || fail "a SIGTERM after the last step went unmentioned: $(cat term_last.out)"
  else
    fail "SIGTERM after the last step ($BASE_STEPS): exit $status, expected 75 or 0: $(cat term_last.out)"
  fi
  echo "ok: SIGTERM after the last step: exit $status"
}

# --- run the classes ---------------------------------------------------------------------
failed=()
for n in ${BIASLAB_ADV_CLASSES:-1 2 3 4 5 6 7 8}; do
  echo "--- class $n"
  set +e
  (
    set -eE
    trap 'echo "FAIL: class '"$n"': command failed (line $LINENO): $BASH_COMMAND" >&2' ERR
    "class$n"
  )
  rc=$?
  set -e
  [[ $rc == 0 ]] || failed+=("$n")
done
[[ ! -s $WORK/.failures ]] || failed+=("(keep-going: $(wc -l < "$WORK/.failures") failed checks)")
(( ${#failed[@]} == 0 )) || die "adversarial classes failed: ${failed[*]}"
echo "all adversarial checks passed"
