"""Reads a biaslab run's TensorBoard events with the tensorboard package (PyPI) and checks
them against the run's metrics_steps.csv and metrics.csv.

  check_tensorboard.py RUN_DIR

Checks: every per-step scalar (train/*) equals metrics_steps.csv at the same steps, every
per-epoch scalar (epoch/*, val/*, test/*) equals metrics.csv (float32 precision), no tag
has a step twice (a resumed run's curves are continuous), and the hparams plugin holds the
session start (with the run's config keys) and end records.
Exit status 0 on success, 77 when the tensorboard package is not importable.
"""
import csv
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2
except ImportError as e:
    print(f"SKIP: tensorboard not importable by {sys.executable}: {e}")
    sys.exit(77)

run = sys.argv[1]
ea = EventAccumulator(f"{run}/tensorboard", size_guidance={"scalars": 0})
ea.Reload()
tags = ea.Tags()["scalars"]


def series(tag):
    events = ea.Scalars(tag)
    steps = [e.step for e in events]
    assert len(steps) == len(set(steps)), f"{tag}: a step appears twice: {steps}"
    assert steps == sorted(steps), f"{tag}: steps out of order: {steps}"
    return {e.step: e.value for e in events}


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


checked = 0
steps = list(csv.DictReader(open(f"{run}/metrics_steps.csv")))
for column, tag in [("train_loss", "train/loss"), ("train_acc", "train/acc"), ("lr", "train/lr"),
                    ("grad_norm", "train/grad_norm"), ("images_per_s", "train/images_per_s"),
                    ("skipped_steps", "train/skipped_steps")]:
    got = series(tag)
    want = {int(r["step"]): float(r[column]) for r in steps if r[column] != ""}
    assert set(got) == set(want), f"{tag}: steps {sorted(got)} != metrics_steps.csv {sorted(want)}"
    for s, v in want.items():
        assert close(got[s], v), f"{tag} at step {s}: {got[s]} != {v}"
        checked += 1
epochs = list(csv.DictReader(open(f"{run}/metrics.csv")))
for column, tag in [("train_loss", "epoch/train_loss"), ("train_acc", "epoch/train_acc"), ("test_loss", "test/loss"),
                    ("test_acc", "test/acc"), ("test_top5_acc", "test/top5_acc"), ("val_acc", "val/acc"),
                    ("val_loss", "val/loss")]:
    if not epochs or column not in epochs[0] or all(r[column] == "" for r in epochs):
        assert tag not in tags, f"{tag} without a metrics.csv column"
        continue
    got = series(tag)
    want = {int(r["step"]): float(r[column]) for r in epochs if r[column] != ""}
    assert set(got) == set(want), f"{tag}: steps {sorted(got)} != metrics.csv {sorted(want)}"
    for s, v in want.items():
        assert close(got[s], v), f"{tag} at step {s}: {got[s]} != {v}"
        checked += 1

content = ea.PluginTagToContent("hparams")
start = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_start_info"]).session_start_info
end = plugin_data_pb2.HParamsPluginData.FromString(content["_hparams_/session_end_info"]).session_end_info
for key in ("model.preset", "optim.lr", "train.batch_size", "data.train_per_class"):
    assert key in start.hparams, f"hparams lack {key}: {sorted(start.hparams)[:20]}"
assert end.status == 1, end  # STATUS_SUCCESS
print(f"{run}: {len(tags)} scalar tags, {checked} values equal to metrics_steps.csv / metrics.csv, "
      f"{len(start.hparams)} hyper-parameters (optim.lr = {start.hparams['optim.lr'].number_value}), session ended")
