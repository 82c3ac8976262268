# `biaslab bench` at a tiny size: well-formed table and JSON (positive rates, the same
# parameter count as `summary`, MFU from a measured peak), bad options refused; and
# scripts/bench_vs_pytorch.py --quick, which asserts that biaslab and its PyTorch twins
# have identical parameter counts before timing (skipped when BIASLAB_PYTHON lacks torch).
source "$(dirname "$0")/lib.sh" "$@"
PYTHON=${BIASLAB_PYTHON:-/usr/bin/python3}
cd "$WORK"
tiny=(--set model.depth=1 --set model.embed_dim=32 --set train.batch_size=8 --set train.eval_batch_size=16
      --set data.train_per_class=20 --set runtime.threads=2 --steps 2 --warmup 1 --repeats 2)
"$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" "${tiny[@]}" --json >bench.json
"$BIASLAB" summary -c "$SRC/configs/fmnist_vit_lite.yaml" "${tiny[@]:0:6}" --json >summary.json
python3 - <<'P' || fail "bench --json"
import json
b = json.load(open("bench.json")); s = json.load(open("summary.json"))
assert b["model"]["params"] == s["parameters"], (b["model"]["params"], s["parameters"])
assert b["model"]["flops_per_image"] == s["flops"], (b["model"]["flops_per_image"], s["flops"])
# train.precision: auto -> bf16 where the CPU has native bf16 (AVX512-BF16, AMX), fp32 otherwise.
flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
native = "avx512_bf16" in flags or "amx_bf16" in flags
assert b["batch_size"] == 8 and b["eval_batch_size"] == 16 and b["threads"] == 2
assert b["precision"] == ("bf16" if native else "fp32"), (b["precision"], native)
assert b["settings"] == {"warmup": 1, "steps": 2, "repeats": 2}
assert b["peak"]["flops_per_s"] > 0 and b["peak"]["kernel"].startswith(("mm ", "1x1 conv", "3x3 conv")), b["peak"]
assert b["memory_format"] == "contiguous"  # auto: the ViT stays contiguous
assert b["cpu"]["model"] and isinstance(b["cpu"]["isa"], list), b["cpu"]
# Built with the RPATH to OpenBLAS's OpenMP build: that is the one LibTorch loaded.
if b["blas_openmp_build"]:
    assert b["blas"].startswith("OpenBLAS") and b["blas"].endswith("(OpenMP)"), b["blas"]
for k in ("train", "infer"):
    r = b[k]
    assert 0 < r["min"] <= r["images_per_s"] <= r["max"], r
    assert abs(r["flops_per_s"] - r["images_per_s"] * b["model"]["flops_per_image"] * (3 if k == "train" else 1)) < 1e-6 * r["flops_per_s"]
    assert abs(r["mfu"] - r["flops_per_s"] / b["peak"]["flops_per_s"]) < 1e-9, r
# The fused kernels that ran (runtime.kernels: auto): the attention kernel on every CPU,
# on AVX512-BF16's path in bf16 where the CPU has it; the add + LayerNorm in pre-norm blocks.
path = "fp32" if not native else ("bf16, AVX512-BF16" if "avx512_bf16" in flags else "bf16, widened to fp32 per tile")
for k in ("train", "infer"):
    assert f"attention ({path})" in b[k]["kernels"], (k, b[k]["kernels"])
    assert any(x.startswith("add+LayerNorm (") for x in b[k]["kernels"]), (k, b[k]["kernels"])
assert [l["variant"] for l in b["loader"]] == ["normalise only", "configured augmentation"], b["loader"]
assert all(l["images_per_s"] > 0 for l in b["loader"])
print("bench.json ok")
P
# --trace, summarised by scripts/trace_summary.py: the fused kernels name themselves.
"$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" "${tiny[@]}" --set train.precision=fp32 \
  --set runtime.kernels=fused --only train --trace trace.json >/dev/null || fail "bench --trace"
python3 "$SRC/scripts/trace_summary.py" trace.json --steps 2 --top 5 --json trace_summary.json >trace.txt \
  || fail "trace_summary.py"
grep -qE "^matrix products +[0-9.]+ ms" trace.txt || fail "trace_summary table"
python3 - <<'P' || fail "trace_summary --json"
import json
(r,) = json.load(open("trace_summary.json"))
c, ops = r["classes_ms_per_step"], r["ops_ms_per_step"]
assert c["matrix products"] > 0 and c["fused kernels (biaslab)"] > 0, c
assert all(k in ops for k in ("biaslab::attention_cpu", "biaslab::add_layer_norm_cpu", "biaslab::bias_gelu_cpu")), ops
assert abs(sum(c.values()) - r["wall_ms_per_step"]) < 0.05 * r["wall_ms_per_step"], (sum(c.values()), r)
print("trace_summary ok")
P
expect_status 2 "not a readable Chrome trace" -- python3 "$SRC/scripts/trace_summary.py" bench.json
out=$("$BIASLAB" bench -c "$SRC/configs/fmnist_resnet20.yaml" --set model.layers=[1,1,1] --set train.precision=fp32 \
      "${tiny[@]:4}" --only train)
echo "$out"
grep -qE "^  train +batch 8 +[0-9]+ images/s .* GFLOP/s +MFU [0-9.]+%$" <<<"$out" || fail "train line"
grep -qE "^  peak \(fp32, fastest dense kernel: (mm|1x1 conv|3x3 conv)" <<<"$out" || fail "peak line"
grep -qE "^  input 1x28x28, precision fp32, 2 thread\(s\), device cpu, channels-last, " <<<"$out" \
  || fail "auto memory format of a ResNet"
grep -q "infer\|loader" <<<"$out" && fail "--only train measured more"
grep -qE "^  train +kernels \(auto\): LibTorch operators only$" <<<"$out" || fail "kernels line of a ResNet"
out=$("$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" "${tiny[@]}" --set runtime.kernels=reference --only infer)
grep -qE "^  infer +kernels \(reference\): LibTorch operators only$" <<<"$out" || fail "kernels line under reference"
expect_status 2 "--only" -- "$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" --only train,gpu
expect_status 2 "--steps" -- "$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" --steps 0
expect_status 2 "train.precision" -- "$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" --set train.precision=fp8
expect_status 2 "runtime.memory_format" -- "$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" \
  --set runtime.memory_format=nhwc
expect_status 2 "fp16" -- "$BIASLAB" bench -c "$SRC/configs/fmnist_vit_lite.yaml" --set train.precision=fp16 \
  --set runtime.device=cpu

# bf16 only where the CPU has it natively: emulated bf16 (e.g. AVX2-only machines) is
# ~40x slower and would make this smoke test take minutes.
precisions=fp32
grep -qwE 'avx512_bf16|amx_bf16' /proc/cpuinfo && precisions=fp32,bf16
export BENCH_PRECISIONS=$precisions
status=0
"$PYTHON" "$SRC/scripts/bench_vs_pytorch.py" --quick --precisions "$precisions" --biaslab "$BIASLAB" --json vs.json \
  || status=$?
if [[ $status == 77 ]]; then
  skip "bench_vs_pytorch.py ($PYTHON has no torch; install python3-torch)"
else
  [[ $status == 0 ]] || fail "bench_vs_pytorch.py --quick exited $status"
  python3 - <<'P' || fail "bench_vs_pytorch.py --json"
import json
import os
rows = json.load(open("vs.json"))["results"]
assert sorted((r["model"], r["precision"]) for r in rows) == sorted(
    (m, p) for m in ("resnet20", "vit", "hybrid") for p in os.environ["BENCH_PRECISIONS"].split(",")), rows
for r in rows:
    assert r["params"] == r["bench"]["model"]["params"] > 0, r
    assert all(r["ratio"][k] > 0 for k in ("train", "infer")), r
    # MFU against bench's measured peak: the rate times the FLOPs per image over that peak.
    peak, flops = r["bench"]["peak"]["flops_per_s"], r["bench"]["model"]["flops_per_image"]
    assert abs(r["mfu"]["train bl"] - 100 * r["biaslab"]["train"] * 3 * flops / peak) < 1e-6, r["mfu"]
    assert abs(r["mfu"]["infer pt"] - 100 * r["pytorch"]["infer"]["images_per_s"] * flops / peak) < 1e-6, r["mfu"]
print("vs.json ok")
P
  # torch.compile peers (torch 2.x only, e.g. the --torch pip suite): one model, fp32.
  if "$PYTHON" -c 'import sys, torch; sys.exit(0 if hasattr(torch, "compile") else 1)' 2>/dev/null; then
    "$PYTHON" "$SRC/scripts/bench_vs_pytorch.py" --quick --models vit --precisions fp32 --compile \
      --biaslab "$BIASLAB" --json vsc.json > vsc.out || fail "bench_vs_pytorch.py --compile"
    grep -q "train ptc" vsc.out || fail "--compile table"
    python3 - <<'P' || fail "bench_vs_pytorch.py --compile --json"
import json
(r,) = json.load(open("vsc.json"))["results"]
assert all(r["pytorch_compiled"][k]["images_per_s"] > 0 and r["ratio_compiled"][k] > 0 for k in ("train", "infer")), r
print("vsc.json ok")
P
  else
    allowed_skip "bench_vs_pytorch.py --compile ($PYTHON's torch has no torch.compile)"
  fi
fi
echo PASS
