#!/usr/bin/env python3
"""Data-parallel scaling of `biaslab train` on this machine: training images/s with 1 rank
and with N ranks (`--nproc N`, Gloo), and the scaling efficiency.

For each config and each layout it trains the same fixed number of steps of the same
global batch into a temporary run directory and reads the training-loop throughput
that run recorded (timing.json: train_images_per_s; evaluation and start-up excluded).
Layouts, with C = the cores given (--cores, default all):
  1 rank  x C/N threads   the reference for efficiency
  N ranks x C/N threads   efficiency = images/s / (N x reference)
  1 rank  x C threads     the same cores used by threads instead of processes
OMP_NUM_THREADS is set to the threads per rank for every run (OpenBLAS sizes its pool from it).

Usage:
  scripts/bench_scaling.py [--configs configs/fmnist_resnet20.yaml,...] [--ranks 2]
      [--steps 60] [--batch 128] [--precision auto] [--cores C] [--json FILE] [--quick]
      [--biaslab build/biaslab]
Exit status: 0, or biaslab's status when a run fails.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(biaslab, config, ranks, threads, args, workdir):
    out = os.path.join(workdir, f"{os.path.basename(config)}-{ranks}x{threads}")
    cmd = [biaslab, "train", "-c", config, "--out", out, "--force",
           "--set", f"train.steps={args.steps}", "--set", f"train.batch_size={args.batch}",
           "--set", f"train.precision={args.precision}", "--set", f"runtime.threads={threads}",
           "--set", "train.checkpoint_every=0", "--set", "train.log_every=1000000",
           "--set", "data.test_fraction=0.02", "--set", "train.eval_batch_size=500"]
    if ranks > 1:
        cmd += ["--nproc", str(ranks)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    start = time.time()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr[-3000:])
        sys.exit(proc.returncode)
    timing = json.load(open(os.path.join(out, "timing.json")))
    return {"config": config, "ranks": ranks, "threads_per_rank": threads,
            "images_per_s": timing["train_images_per_s"], "train_s": timing["train_time_s"],
            "wall_s": round(time.time() - start, 2), "command": " ".join(cmd)}


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--configs", default="configs/fmnist_resnet20.yaml,configs/fmnist_vit_lite.yaml,"
                                        "configs/fmnist_hybrid_lite.yaml")
    p.add_argument("--ranks", default="2", help="comma-separated rank counts besides 1")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--batch", type=int, default=128, help="global batch size")
    p.add_argument("--precision", default="auto")
    p.add_argument("--cores", type=int, default=os.cpu_count())
    p.add_argument("--biaslab", default=os.path.join(ROOT, "build", "biaslab"))
    p.add_argument("--json", help="also write the results to this file")
    p.add_argument("--quick", action="store_true", help="tiny runs (for the test suite)")
    args = p.parse_args()
    if args.quick:
        args.steps, args.batch = 4, 16
    configs = [c if os.path.isabs(c) else os.path.join(ROOT, c) for c in args.configs.split(",") if c]
    rank_counts = [int(r) for r in args.ranks.split(",") if r]
    results = []
    with tempfile.TemporaryDirectory(prefix="biaslab_scaling_") as work:
        for config in configs:
            for n in rank_counts:
                per_rank = max(1, args.cores // n)
                ref = run(args.biaslab, config, 1, per_rank, args, work)
                multi = run(args.biaslab, config, n, per_rank, args, work)
                threads = run(args.biaslab, config, 1, per_rank * n, args, work)
                eff = multi["images_per_s"] / (n * ref["images_per_s"])
                results.append({"config": os.path.relpath(config, ROOT), "ranks": n, "threads_per_rank": per_rank,
                                "reference": ref, "ranks_run": multi, "threads_run": threads,
                                "efficiency": eff,
                                "ranks_vs_threads": multi["images_per_s"] / threads["images_per_s"]})
    print(f"{'config':34} {'1 rank x t':>12} {'N ranks x t':>12} {'efficiency':>10} {'1 rank x Nt':>12} "
          f"{'ranks/threads':>13}")
    for r in results:
        print(f"{r['config']:34} {r['reference']['images_per_s']:9.0f}/s  "
              f"{r['ranks_run']['images_per_s']:9.0f}/s  {100 * r['efficiency']:9.1f}% "
              f"{r['threads_run']['images_per_s']:9.0f}/s  {r['ranks_vs_threads']:12.2f}x"
              f"   (N={r['ranks']}, t={r['threads_per_rank']})")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"steps": args.steps, "batch": args.batch, "precision": args.precision,
                       "cores": args.cores, "results": results}, f, indent=2)


if __name__ == "__main__":
    main()
