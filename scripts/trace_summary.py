#!/usr/bin/env python3
"""Where a training step's time goes, by operator class, from `biaslab bench --trace`.

Reads the Chrome trace that `biaslab bench --trace FILE` writes (LibTorch's operator
profiler: one complete event per operator call, nested by time on each thread), computes
each call's self time (its duration minus that of the calls inside it), and sums the
self times by class: matrix products, biaslab's fused kernels, softmax, normalisation,
activations, elementwise arithmetic, copies and casts, reductions, the optimizer's
per-parameter arithmetic, autograd bookkeeping, and the rest. Time on the recorded
thread that no operator covers (Python-free C++ glue, biaslab's own loop, the fused
kernels' forward passes in builds before they were named) is reported as "outside
operators". Divide by the number of steps the trace recorded (`--steps`, the bench's
`--steps`).

Usage:
  biaslab bench -c configs/fmnist_vit_lite.yaml --only train --steps 5 --repeats 1 --trace vit.json
  python3 scripts/trace_summary.py vit.json --steps 5 [--top 15] [--json out.json]
  python3 scripts/trace_summary.py before.json after.json --steps 5     (side by side)
Only the standard library is needed.
"""
import argparse
import collections
import json
import re
import sys
from pathlib import Path

# Operator class by the name of the recorded call, first match wins. Backward nodes
# (e.g. AddmmBackward0) are bookkeeping around the operators they call; their own self
# time counts as autograd.
CLASSES = [
    ("fused kernels (biaslab)", r"^biaslab::|CppNode<biaslab::"),
    ("matrix products", r"^aten::(mm|addmm|bmm|baddbmm|matmul|linear|_mkldnn_matmul|mkldnn_matmul|dot|addmv|mv)$"),
    ("convolutions", r"^aten::(_?convolution|conv\d?d|mkldnn_convolution|_convolution_mode|.*convolution_backward.*)$"),
    ("attention (SDPA)", r"scaled_dot_product|_flash_attention|_efficient_attention"),
    ("softmax", r"^aten::(_?softmax|_?log_softmax|_softmax_backward_data|_log_softmax_backward_data)$"),
    ("normalisation", r"^aten::(native_layer_norm|layer_norm|native_layer_norm_backward|batch_norm|"
                      r"_batch_norm_impl_index|native_batch_norm|native_batch_norm_backward|"
                      r"_native_batch_norm_legit.*|group_norm|native_group_norm.*)$"),
    ("activations", r"^aten::(gelu|gelu_backward|relu_?|threshold_backward|silu|silu_backward|tanh|"
                    r"tanh_backward|sigmoid|sigmoid_backward)$"),
    ("loss", r"^aten::(cross_entropy_loss|nll_loss.*)$"),
    ("optimizer", r"^aten::(addcmul_|addcdiv_|lerp_|_foreach_.*|sqrt|sqrt_|maximum)$"),
    ("reductions", r"^aten::(sum|mean|norm|linalg_vector_norm|max|min|argmax|amax|all|any|isfinite|"
                   r"_local_scalar_dense|item|eq|ne|ge|le)$"),
    ("copies and casts", r"^aten::(to|_to_copy|copy_|clone|contiguous|cat|stack|_cat|index_select|"
                         r"index|gather|scatter_add_?|masked_fill_?|where|fill_|zero_|zeros|ones|full|"
                         r"empty.*|resize_|new_.*)$"),
    ("elementwise", r"^aten::(add|add_|sub|sub_|mul|mul_|div|div_|neg|exp|log|pow|clamp.*|rsub|"
                    r"dropout|native_dropout.*|bernoulli_?|abs|sign|reciprocal)$"),
    ("views", r"^aten::(view|reshape|_reshape_alias|permute|transpose|t|unsqueeze|squeeze|expand|"
              r"select|slice|as_strided_?|unbind|split|chunk|narrow|flatten|detach|alias|resolve_conj|"
              r"resolve_neg|_unsafe_view|view_as|expand_as|unflatten|numpy_T)$|^detach$"),
    ("autograd", r"Backward\d*$|^autograd::|AccumulateGrad|^torch::autograd::"),
]
COMPILED = [(name, re.compile(pattern)) for name, pattern in CLASSES]


def classify(name):
    for cls, pattern in COMPILED:
        if pattern.search(name):
            return cls
    return "other"


def die(message):
    print(f"trace_summary: {message}", file=sys.stderr)
    sys.exit(2)


def load_events(path):
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        die(f"{path}: not a readable Chrome trace ({e})")
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    complete = [e for e in events if isinstance(e, dict) and e.get("ph") == "X" and "dur" in e and "ts" in e]
    if not complete:
        die(f"{path}: not a readable Chrome trace: no complete ('X') events; was it written by bench --trace?")
    return complete


def summarise(events):
    """{class: self µs}, {operator: self µs}, wall µs (per thread span of the busiest thread),
    µs of that thread not covered by any top-level call."""
    by_thread = collections.defaultdict(list)
    for e in events:
        by_thread[(e.get("pid"), e.get("tid"))].append(e)
    per_class, per_op = collections.Counter(), collections.Counter()
    wall = uncovered = 0.0
    for evs in by_thread.values():
        # Parents before children: start time, then the longer first.
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack, top_level = [], 0.0
        child_time = collections.defaultdict(float)
        for i, e in enumerate(evs):
            start, end = float(e["ts"]), float(e["ts"]) + float(e["dur"])
            while stack and float(evs[stack[-1]]["ts"]) + float(evs[stack[-1]]["dur"]) <= start:
                stack.pop()
            if stack:
                child_time[stack[-1]] += float(e["dur"])
            else:
                top_level += float(e["dur"])
            stack.append(i)
        for i, e in enumerate(evs):
            self_us = max(0.0, float(e["dur"]) - child_time[i])
            per_class[classify(e["name"])] += self_us
            per_op[e["name"]] += self_us
        span = max(float(e["ts"]) + float(e["dur"]) for e in evs) - min(float(e["ts"]) for e in evs)
        if span > wall:
            wall, uncovered = span, span - top_level
    return per_class, per_op, wall, uncovered


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="+", help="Chrome trace(s) from biaslab bench --trace")
    parser.add_argument("--steps", type=int, default=1, help="training steps each trace recorded (bench --steps)")
    parser.add_argument("--top", type=int, default=0, help="also list the N operators with the most self time")
    parser.add_argument("--json", metavar="FILE", help="write the figures here")
    args = parser.parse_args()
    if args.steps < 1:
        die(f"--steps must be >= 1, got {args.steps}")
    results = []
    for path in args.traces:
        per_class, per_op, wall, uncovered = summarise(load_events(path))
        if uncovered > 0:
            per_class["outside operators"] += uncovered
        results.append({"trace": path, "wall_ms_per_step": wall / 1e3 / args.steps,
                        "classes_ms_per_step": {k: v / 1e3 / args.steps for k, v in per_class.items()},
                        "ops_ms_per_step": {k: v / 1e3 / args.steps for k, v in per_op.most_common()}})
    names = sorted({c for r in results for c in r["classes_ms_per_step"]},
                   key=lambda c: -max(r["classes_ms_per_step"].get(c, 0.0) for r in results))
    head = f"{'class':<26}" + "".join(f"{Path(r['trace']).name[:22]:>24}" for r in results)
    print(head)
    for c in names:
        cells = ""
        for r in results:
            ms = r["classes_ms_per_step"].get(c, 0.0)
            cells += f"{ms:>12.1f} ms {100 * ms / r['wall_ms_per_step']:>6.1f}%   "
        print(f"{c:<26}{cells}")
    print(f"{'step (wall)':<26}" + "".join(f"{r['wall_ms_per_step']:>12.1f} ms {'':>10}" for r in results))
    print(f"(self time per step over {args.steps} step(s); a class's share is of the step's wall time; "
          f"OpenMP worker threads' time is inside the calls that launched them)")
    if args.top:
        for r in results:
            print(f"\n{r['trace']}: top {args.top} operators by self time per step")
            for name, ms in list(r["ops_ms_per_step"].items())[:args.top]:
                print(f"  {ms:>9.2f} ms  {name}  [{classify(name)}]")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
