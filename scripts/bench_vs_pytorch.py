#!/usr/bin/env python3
"""Throughput of biaslab (C++/LibTorch) against the same models in plain PyTorch.

For each model x precision: runs `biaslab bench`, builds a plain-PyTorch twin of the
model (nn.Module classes, a standard training loop: what a researcher would write),
checks that both have exactly the same number of parameters, times the twin the same
way (same batch sizes, threads, precision, optimizer, loss, synthetic data; W warm-up
steps, then R repetitions of N steps, median images/s) and prints biaslab/PyTorch.

The twins are built from the resolved model config (`biaslab train --print-config`) and
mirror the C++ modules op for op (src/models/{resnet,vit}.cpp, src/layers/*.cpp) under
the same parameter names, so biaslab's exported state dicts load into them; knobs they
do not implement stop the script with a message instead of benchmarking something else.

What still differs, by design (idiomatic PyTorch): the twin's step syncs on loss.item()
alone, where biaslab's (engine/step.cpp) also computes the global gradient norm and the
correct count in its one sync; zero_grad(set_to_none=True), where LibTorch 1.13's
zero_grad() zeroes in place; and torch.optim's Python SGD/AdamW against torch::optim's
C++ ones.

Usage (Debian's python3-torch is the LibTorch biaslab links against; a venv with torch
2.x works too):
  /usr/bin/python3 scripts/bench_vs_pytorch.py [--models resnet20,vit,hybrid]
      [--precisions fp32,bf16] [--threads N] [--steps 20 --warmup 3 --repeats 5]
      [--quick] [--json FILE] [--biaslab build/biaslab] [--compile]
  .venv-torch/bin/python scripts/bench_vs_pytorch.py --biaslab build-pip/biaslab --compile
      (LibTorch 2.x on both sides, and the twins also under torch.compile)
  /usr/bin/python3 scripts/bench_vs_pytorch.py --check-params-only
Exit status: 0 on success, 1 on a parameter-count mismatch or a model the twins cannot
mirror, biaslab's status when it fails, 77 when torch is not importable.
"""
import argparse
import contextlib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ImportError as e:  # the caller reports a skip
    print(f"SKIP: torch is not importable by {sys.executable}: {e}")
    sys.exit(77)

REPO = Path(__file__).resolve().parent.parent

# The benchmarked models: name -> (experiment config, extra --set overrides).
MODELS = {
    "resnet20": ("configs/fmnist_resnet20.yaml", []),
    "vit": ("configs/fmnist_vit_lite.yaml", []),
    "hybrid": ("configs/fmnist_hybrid_lite.yaml", []),
}

# --quick: a smoke test of the whole pipeline, not a measurement. One thread: OpenMP
# threads that spin-wait on a busy machine (a parallel test suite) can be 50x slower.
QUICK = {"steps": 2, "warmup": 1, "repeats": 1, "batch_size": 16, "eval_batch_size": 32, "threads": 1}

LOW_PRECISION = (torch.bfloat16, torch.float16)


class TwinError(Exception):
    """The resolved config asks for something the PyTorch twins do not mirror."""


# ---------------------------------------------------------------------------------------
# Layers: src/layers/*.cpp
# ---------------------------------------------------------------------------------------

class LayerNormFp32(nn.LayerNorm):
    """layers/norm.cpp LayerNormFp32: a bf16/fp16 input is normalised (and returned) in
    fp32, since LibTorch 1.13's CPU layer_norm rejects a bf16 input with fp32 weights.
    With it the transformer's residual stream stays fp32 under autocast."""

    def forward(self, x):
        return super().forward(x.float() if x.dtype in LOW_PRECISION else x)


class Attention(nn.Module):
    """layers/attention.cpp: fused qkv Linear, then either the fused kernel
    (compat::fused_attention, LibTorch 2.0+) or the manual softmax((q * scale) k^T) v."""

    def __init__(self, dim, num_heads, qkv_bias, attn_drop, proj_drop, fused):
        super().__init__()
        self.num_heads = num_heads
        self.fused = fused
        self.qkv = nn.Linear(dim, 3 * dim, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        b, n, c = x.shape
        h = self.num_heads
        d = c // h
        qkv = self.qkv(x).view(b, n, 3, h, d).permute(2, 0, 3, 1, 4)  # (3, B, H, N, D)
        q, k, v = qkv[0], qkv[1], qkv[2]  # select, as the C++ (not unbind)
        if self.fused:
            p = self.attn_drop.p if self.training else 0.0
            out = F.scaled_dot_product_attention(q, k, v, None, p)
        else:
            # biaslab scales q (not the N x N scores) before the product.
            attn = torch.matmul(q * (1.0 / math.sqrt(d)), k.transpose(-2, -1))  # (B, H, N, N)
            out = torch.matmul(self.attn_drop(attn.softmax(-1)), v)
        return self.proj_drop(self.proj(out.transpose(1, 2).reshape(b, n, c)))


class Mlp(nn.Module):
    """layers/mlp.cpp: fc1 -> GELU (exact erf form, torch's default) -> drop -> fc2 -> drop."""

    def __init__(self, dim, hidden, drop):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(drop)

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class Block(nn.Module):
    """layers/transformer_block.cpp, pre-norm: x + Attn(N1(x)), then + MLP(N2(.))."""

    def __init__(self, dim, num_heads, mlp_ratio, qkv_bias, drop, attn_drop, residual, fused):
        super().__init__()
        self.residual = residual
        self.norm1 = LayerNormFp32(dim, eps=1e-6)  # make_token_norm("layernorm"): eps 1e-6
        self.attn = Attention(dim, num_heads, qkv_bias, attn_drop, drop, fused)
        self.norm2 = LayerNormFp32(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop)  # C++ static_cast truncates too

    def forward(self, x):
        a = self.attn(self.norm1(x))
        y = x + a if self.residual else a
        m = self.mlp(self.norm2(y))
        return y + m if self.residual else m


class PatchEmbed(nn.Module):
    """layers/patch_embed.cpp: optional CNN backbone, then a stride-p p x p conv (bias)."""

    def __init__(self, patch_size, in_chans, dim, backbone=None):
        super().__init__()
        if backbone is not None:
            self.backbone = backbone
        self.proj = nn.Conv2d(in_chans, dim, patch_size, stride=patch_size)

    def forward(self, x):
        if hasattr(self, "backbone"):
            x = self.backbone(x)
        return self.proj(x).flatten(2).transpose(1, 2)  # (B, D, h, w) -> (B, hw, D)


# ---------------------------------------------------------------------------------------
# Models: src/models/resnet.cpp, src/models/vit.cpp
# ---------------------------------------------------------------------------------------

def conv(cin, cout, k, stride):
    return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)


class BasicBlock(nn.Module):
    """resnet.cpp BasicBlock: conv3x3-BN-ReLU-conv3x3-BN (+ identity or 1x1 conv-BN
    projection, option B), ReLU. Out-of-place ReLUs, as torch::relu in the C++."""

    def __init__(self, cin, cout, stride, residual):
        super().__init__()
        self.residual = residual
        self.conv1 = conv(cin, cout, 3, stride)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = conv(cout, cout, 3, 1)
        self.bn2 = nn.BatchNorm2d(cout)
        if residual and (stride != 1 or cin != cout):
            self.downsample = nn.Sequential(conv(cin, cout, 1, stride), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        if not self.residual:
            return F.relu(y)
        identity = self.downsample(x) if hasattr(self, "downsample") else x
        return F.relu(y + identity)


class ResNet(nn.Module):
    """resnet.cpp ResNet with BasicBlocks and BatchNorm: cifar stem (3x3 conv) or imagenet
    stem (7x7/2 conv + 3x3/2 max-pool); each stage after the first halves the resolution;
    head = spatial mean + fc. num_classes 0 and global_pool False give the hybrid's trunk,
    which returns the last stage's map."""

    def __init__(self, in_chans, num_classes, stem, layers, widths, residual, global_pool=True):
        super().__init__()
        self.global_pool = global_pool
        imagenet = stem == "imagenet"
        self.conv1 = conv(in_chans, widths[0], 7, 2) if imagenet else conv(in_chans, widths[0], 3, 1)
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1) if imagenet else None
        cin = widths[0]
        for s, (depth, width) in enumerate(zip(layers, widths)):
            blocks = []
            for b in range(depth):
                blocks.append(BasicBlock(cin, width, 2 if (b == 0 and s > 0) else 1, residual))
                cin = width
            self.add_module(f"layer{s + 1}", nn.Sequential(*blocks))
        self.num_stages = len(layers)
        self.num_features = cin
        self.fc = nn.Linear(cin, num_classes) if num_classes > 0 else None
        # ResNetImpl::feature_size: every stride-2 layer maps s to ceil(s / 2).
        self.halvings = len(layers) - 1 + (2 if imagenet else 0)

    def feature_size(self, image_size):
        for _ in range(self.halvings):
            image_size = (image_size + 1) // 2
        return image_size

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        if self.maxpool is not None:
            y = self.maxpool(y)
        for s in range(self.num_stages):
            y = getattr(self, f"layer{s + 1}")(y)
        if not self.global_pool:
            return y
        y = y.mean((2, 3))  # as the C++, not AdaptiveAvgPool2d
        return self.fc(y) if self.fc is not None else y


class ViT(nn.Module):
    """vit.cpp ViT: patch embedding (optionally on a CNN backbone's map), class token,
    learned positional embedding, pre-norm blocks, final LayerNorm, class-token (or mean)
    pooling, Linear head."""

    def __init__(self, img_size, patch_size, in_chans, num_classes, embed_dim, depth, num_heads,
                 mlp_ratio, qkv_bias, drop_rate, attn_drop_rate, pool, pos_embed, residual, fused,
                 backbone=None):
        super().__init__()
        self.patch_embed = PatchEmbed(patch_size, in_chans, embed_dim, backbone)
        tokens = (img_size // patch_size) ** 2 + (1 if pool == "cls" else 0)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, embed_dim)) if pool == "cls" else None
        self.pos_embed = nn.Parameter(torch.zeros(1, tokens, embed_dim)) if pos_embed == "learned" else None
        self.pos_drop = nn.Dropout(drop_rate)
        self.blocks = nn.Sequential(*[
            Block(embed_dim, num_heads, mlp_ratio, qkv_bias, drop_rate, attn_drop_rate, residual, fused)
            for _ in range(depth)])
        self.norm = LayerNormFp32(embed_dim, eps=1e-6)
        self.head = nn.Linear(embed_dim, num_classes)

    def forward(self, x):
        t = self.patch_embed(x)  # (B, N, D)
        # ViTImpl::embed: the patch projection's bf16 output under autocast is cast back to
        # the parameters' dtype, so the residual stream is fp32 whatever cls/pos_embed are.
        if t.dtype != self.patch_embed.proj.weight.dtype:
            t = t.to(self.patch_embed.proj.weight.dtype)
        if self.cls_token is not None:
            t = torch.cat([self.cls_token.expand(t.shape[0], -1, -1), t], 1)  # (B, N+1, D)
        t = self.pos_drop(t + self.pos_embed if self.pos_embed is not None else t)
        t = self.norm(self.blocks(t))
        t = t[:, 0] if self.cls_token is not None else t.mean(1)
        return self.head(t)


# ---------------------------------------------------------------------------------------
# Twin from the resolved config (biaslab train --print-config)
# ---------------------------------------------------------------------------------------

def parse_scalar(text):
    """One value of biaslab's --print-config YAML (block mappings, flow lists of scalars)."""
    text = text.strip()
    if text in ("~", "null"):
        return None
    if text in ("true", "false"):
        return text == "true"
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [parse_scalar(t) for t in inner.split(",")] if inner else []
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


def parse_section(text, section):
    """The `section:` mapping of the resolved config as a dict."""
    out, inside = {}, False
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith(" "):
            inside = line.rstrip() == f"{section}:"
            continue
        if inside:
            key, _, value = line.strip().partition(":")
            out[key] = parse_scalar(value)
    return out


# ModelConfig defaults (src/config/config.h) for keys --print-config leaves out.
MODEL_DEFAULTS = {
    "residual": True, "stem": "cifar", "block": "basic", "layers": [3, 3, 3], "widths": [16, 32, 64],
    "tokenizer": "resnet", "cnn_norm": "batchnorm", "patch_size": 4, "embed_dim": 192, "depth": 6,
    "num_heads": 3, "mlp_ratio": 2.0, "qkv_bias": True, "drop_rate": 0.0, "attn_drop_rate": 0.0,
    "pool": "cls", "norm_placement": "pre", "pos_embed": "learned", "drop_path_rate": 0.0,
    "layer_scale_init": 0.0, "attn_window": 0, "gpsa_layers": 0, "rezero": False,
}
# The values the twins mirror, for the knobs they implement only in part.
RESNET_SUPPORTED = {"stem": ("cifar", "imagenet"), "block": ("basic",)}
VIT_SUPPORTED = {
    "norm": ("", "layernorm"), "norm_placement": ("pre",), "pos_embed": ("learned", "none"),
    "pool": ("cls", "gap"), "drop_path_rate": (0.0,), "layer_scale_init": (0.0,), "attn_window": (0,),
    "gpsa_layers": (0,), "rezero": (False,),
}
HYBRID_SUPPORTED = {"tokenizer": ("resnet",), "cnn_norm": ("batchnorm",), **RESNET_SUPPORTED}


def require(m, supported):
    for key, allowed in supported.items():
        if m.get(key, "") not in allowed:
            raise TwinError(f"model.{key}: {m.get(key)!r} is not mirrored by the PyTorch twin "
                            f"(supported: {', '.join(map(repr, allowed))})")


def build_twin(m, channels, image_size, num_classes, fused):
    """The PyTorch twin of models/registry.cpp's build_model for the resolved model section."""
    m = {**MODEL_DEFAULTS, **m}
    family = m.get("family")
    if family == "resnet":
        require(m, {"norm": ("", "batchnorm"), **RESNET_SUPPORTED})
        return ResNet(channels, num_classes, m["stem"], m["layers"], m["widths"], m["residual"])
    if family not in ("vit", "hybrid"):
        raise TwinError(f"model.family: {family!r} has no PyTorch twin")
    require(m, VIT_SUPPORTED)
    backbone, size, chans = None, image_size, channels
    if family == "hybrid":
        require(m, HYBRID_SUPPORTED)
        backbone = ResNet(channels, 0, m["stem"], m["layers"], m["widths"], m["residual"], global_pool=False)
        size, chans = backbone.feature_size(image_size), backbone.num_features
    return ViT(size, m["patch_size"], chans, num_classes, m["embed_dim"], m["depth"], m["num_heads"],
               m["mlp_ratio"], m["qkv_bias"], m["drop_rate"], m["attn_drop_rate"], m["pool"],
               m["pos_embed"], m["residual"], fused, backbone)


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def stage_params(model, stage):
    """Parameters of the twin in one stage of `biaslab summary` (Classifier::stages())."""
    if stage.endswith("stem"):
        base = stage[:-len("stem")]
        prefixes = [base + "conv1.", base + "bn1."]
    elif stage == "embed":
        prefixes = ["patch_embed.proj.", "cls_token", "pos_embed"]
    elif stage == "head":
        prefixes = ["fc.", "norm.", "head."]
    else:
        prefixes = [stage + "."]
    return sum(p.numel() for name, p in model.named_parameters()
               if any(name == q or (q.endswith(".") and name.startswith(q)) for q in prefixes))


# ---------------------------------------------------------------------------------------
# biaslab
# ---------------------------------------------------------------------------------------

class Biaslab:
    def __init__(self, path):
        self.path = str(path)
        self.env = {**os.environ, "BIASLAB_HOME": os.environ.get("BIASLAB_HOME") or str(REPO)}

    def run(self, args):
        cmd = [self.path] + args
        try:
            return subprocess.run(cmd, cwd=REPO, env=self.env, check=True, capture_output=True, text=True).stdout
        except subprocess.CalledProcessError as e:
            sys.stderr.write(e.stderr)
            print(f"error: `{' '.join(cmd)}` exited with status {e.returncode}", file=sys.stderr)
            sys.exit(e.returncode or 1)
        except OSError as e:
            print(f"error: cannot run {self.path}: {e} (build it, or pass --biaslab)", file=sys.stderr)
            sys.exit(1)

    @staticmethod
    def config_args(name, extra_sets=()):
        config, sets = MODELS[name]
        out = ["-c", config]
        for s in list(sets) + list(extra_sets):
            out += ["--set", s]
        return out

    def model_config(self, name):
        text = self.run(["train"] + self.config_args(name) + ["--print-config"])
        return parse_section(text, "model")

    def summary(self, name):
        return json.loads(self.run(["summary"] + self.config_args(name) + ["--json"]))

    def bench(self, name, sets, steps, warmup, repeats):
        args = ["bench"] + self.config_args(name, sets) + [
            "--json", "--only", "train,infer", "--steps", str(steps), "--warmup", str(warmup), "--repeats", str(repeats)]
        return json.loads(self.run(args))


# ---------------------------------------------------------------------------------------
# PyTorch timing, mirroring src/engine/step.cpp and evaluate.cpp
# ---------------------------------------------------------------------------------------

def make_optimizer(model, o):
    """engine/optimizer.cpp: no weight decay on 0/1-D tensors (biases, norm weights),
    pos_embed, cls_token, relative_position_bias_table."""
    exempt = ("pos_embed", "cls_token", "relative_position_bias_table")
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        if p.requires_grad:
            (no_decay if p.dim() <= 1 or name.endswith(exempt) else decay).append(p)
    groups = [{"params": decay, "weight_decay": o["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    if o["name"] == "sgd":
        return torch.optim.SGD(groups, lr=o["lr"], momentum=o["momentum"], nesterov=o["nesterov"])
    if o["name"] == "adamw":
        return torch.optim.AdamW(groups, lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"])
    raise TwinError(f"optim.name: {o['name']!r} is not mirrored")


def autocast(precision, device):
    if precision == "fp32":
        return contextlib.nullcontext()
    if precision == "bf16":
        return torch.autocast(device.type, dtype=torch.bfloat16)
    raise TwinError(f"train.precision: {precision!r} is not mirrored")


def measure(step, batch, warmup, steps, repeats, finish=lambda: None):
    """`finish` waits for the repetition's queued work (biaslab syncs once per repetition)."""
    for _ in range(warmup):
        step()
    finish()
    rates = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(steps):
            step()
        finish()
        rates.append(steps * batch / (time.perf_counter() - start))
    return {"images_per_s": statistics.median(rates), "min": min(rates), "max": max(rates)}


def time_pytorch(model, bench, device, warmup, steps, repeats, channels_last=False, compiled=False):
    """compiled: run the forward passes through torch.compile (Inductor, default mode);
    the warm-up steps include the compilation of the training and inference graphs."""
    c, s, k = bench["input"]["channels"], bench["input"]["image_size"], bench["input"]["num_classes"]
    bs, ebs = bench["batch_size"], bench["eval_batch_size"]
    precision, smoothing = bench["precision"], bench["label_smoothing"]
    if bench.get("ema_decay", 0) > 0:
        raise TwinError(f"train.ema_decay: {bench['ema_decay']} (an EMA update per step) is not mirrored")
    model.to(device)
    if channels_last:  # --pytorch-channels-last: the layout biaslab's runtime.memory_format picks
        model.to(memory_format=torch.channels_last)
    optimizer = make_optimizer(model, bench["optim"])
    forward = torch.compile(model) if compiled else model
    g = torch.Generator().manual_seed(0)
    x, y = torch.randn(bs, c, s, s, generator=g).to(device), torch.randint(0, k, (bs,), generator=g).to(device)
    xe, ye = torch.randn(ebs, c, s, s, generator=g).to(device), torch.randint(0, k, (ebs,), generator=g).to(device)

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        with autocast(precision, device):
            logits = forward(x)
        loss = F.cross_entropy(logits.float(), y, label_smoothing=smoothing)
        loss.backward()
        optimizer.step()
        return loss.item()  # the one host sync per step

    # evaluate.cpp: summed cross-entropy and correct count stay on the device; one sync
    # per repetition (per loader pass in biaslab).
    totals = {}

    def infer_step():
        with torch.no_grad():  # NoGradGuard, not inference_mode
            with autocast(precision, device):
                logits = forward(xe)
            logits = logits.float()
            loss = F.cross_entropy(logits, ye, reduction="sum").double()
            correct = (logits.argmax(1) == ye).sum()
            totals["loss"] = totals.get("loss", 0) + loss
            totals["correct"] = totals.get("correct", 0) + correct

    def infer_finish():
        if totals:
            (totals.pop("loss") + totals.pop("correct")).item()

    model.train()
    train = measure(train_step, bs, warmup, steps, repeats)
    model.eval()
    infer = measure(infer_step, ebs, warmup, steps, repeats, infer_finish)
    return {"train": train, "infer": infer}


# ---------------------------------------------------------------------------------------

def release(version):
    """'1.13.0a0+git' -> '1.13.0'."""
    match = re.match(r"\d+(\.\d+)*", version or "")
    return match.group(0) if match else version


def has_sdpa():
    return hasattr(F, "scaled_dot_product_attention")


def check_params(name, twin, summary):
    """Total and per-stage parameter counts of the twin against `biaslab summary --json`."""
    ours, theirs = count_params(twin), summary["parameters"]
    stages = [(st["name"], st["parameters"], stage_params(twin, st["name"])) for st in summary.get("stages", [])]
    if ours == theirs and all(a == b for _, a, b in stages):
        print(f"{name:<9} {summary['model']:<16} {ours:>10,} parameters: biaslab == PyTorch twin")
        return True
    print(f"{name}: parameter counts differ: biaslab {theirs:,}, PyTorch twin {ours:,}", file=sys.stderr)
    for stage, a, b in stages:
        print(f"  {stage:<32} biaslab {a:>9,}  twin {b:>9,}{'' if a == b else '   <-- differs'}", file=sys.stderr)
    return False


def ratio(a, b):
    return a / b if b else float("nan")


def print_table(rows, header):
    print()
    print(header)
    compiled = any("pytorch_compiled" in r for r in rows)
    cols = ["model", "prec", "params", "train bl", "train pt", "ratio"]
    if compiled:
        cols += ["train ptc", "ratio"]
    cols += ["infer bl", "infer pt", "ratio"]
    if compiled:
        cols += ["infer ptc", "ratio"]
    widths = [9, 5, 10] + [10 if c.startswith(("train", "infer")) else 7 for c in cols[3:]]
    print("".join(f"{c:>{w}}" if i > 1 else f"{c:<{w}}" for i, (c, w) in enumerate(zip(cols, widths))))
    for r in rows:
        cells = [r["model"], r["precision"], f"{r['params']:,}"]
        for phase in ("train", "infer"):
            cells += [f"{r['biaslab'][phase]:.0f}", f"{r['pytorch'][phase]['images_per_s']:.0f}",
                      f"{r['ratio'][phase]:.2f}x"]
            if compiled:
                c = r.get("pytorch_compiled")
                cells += [f"{c[phase]['images_per_s']:.0f}" if c else "-",
                          f"{r['ratio_compiled'][phase]:.2f}x" if c else "-"]
        print("".join(f"{c:>{w}}" if i > 1 else f"{c:<{w}}" for i, (c, w) in enumerate(zip(cells, widths))))
    print("(images/s, median over repetitions; bl = biaslab, pt = PyTorch eager"
          + (", ptc = PyTorch under torch.compile" if compiled else "") + "; ratio = biaslab / PyTorch)")


def mfu(row):
    """Model FLOPs utilisation of each side, phase by phase: model FLOP/s over the peak
    `biaslab bench` measured on the spot (same CPU, precision and threads); training
    counts 3x the forward FLOPs, as bench does."""
    bench = row["bench"]
    peak = bench.get("peak", {}).get("flops_per_s", 0.0)
    flops = bench["model"]["flops_per_image"]
    sides = {"bl": row["biaslab"], "pt": {k: v["images_per_s"] for k, v in row["pytorch"].items()}}
    if "pytorch_compiled" in row:
        sides["ptc"] = {k: v["images_per_s"] for k, v in row["pytorch_compiled"].items()}
    out = {}
    for side, rates in sides.items():
        for phase, per_image in (("train", 3 * flops), ("infer", flops)):
            out[f"{phase} {side}"] = 100.0 * rates[phase] * per_image / peak if peak > 0 else float("nan")
    return out


def print_mfu(rows, cpu):
    print()
    print(f"MFU: model FLOP/s / the peak biaslab bench measured on this CPU ({cpu}) at each row's precision "
          "and threads; training counts 3x the forward FLOPs")
    for r in rows:
        peak = r["bench"].get("peak", {})
        cells = "  ".join(f"{k} {v:5.1f}%" for k, v in r["mfu"].items())
        print(f"{r['model']:<9}{r['precision']:<5} {cells}   (peak {peak.get('flops_per_s', 0) / 1e9:.1f} GFLOP/s: "
              f"{peak.get('kernel', '?')})")
    for r in rows:
        for phase in ("train", "infer"):
            kernels = r["bench"].get(phase, {}).get("kernels")
            if kernels is not None:
                print(f"{r['model']:<9}{r['precision']:<5} biaslab {phase} kernels: "
                      f"{', '.join(kernels) if kernels else 'LibTorch operators only'}")


def csv_list(text, allowed, what):
    items = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in items if t not in allowed]
    if bad or not items:
        raise SystemExit(f"--{what}: unknown {', '.join(bad) or '(empty)'}; choose from {', '.join(allowed)}")
    return items


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--biaslab", default=str(REPO / "build" / "biaslab"), help="the biaslab binary")
    parser.add_argument("--models", default=",".join(MODELS), help="comma-separated: " + ", ".join(MODELS))
    parser.add_argument("--precisions", default="fp32,bf16", help="comma-separated: fp32, bf16")
    parser.add_argument("--threads", type=int, help="intra-op threads, both sides (default: all cores)")
    parser.add_argument("--device", default="cpu", help="runtime.device for both sides (default: cpu)")
    parser.add_argument("--steps", type=int, default=20, help="steps per repetition")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up steps")
    parser.add_argument("--repeats", type=int, default=5, help="timed repetitions")
    parser.add_argument("--batch-size", type=int, help="override train.batch_size on both sides")
    parser.add_argument("--eval-batch-size", type=int, help="override train.eval_batch_size on both sides")
    parser.add_argument("--attention", choices=("auto", "fused", "manual"), default="auto",
                        help="twin attention kernel; auto = what biaslab's LibTorch runs "
                             "(fused scaled_dot_product_attention from 2.0)")
    parser.add_argument("--pytorch-channels-last", action="store_true",
                        help="give the PyTorch twin the channels-last weights biaslab uses for the model "
                             "(runtime.memory_format); default: plain PyTorch (contiguous)")
    parser.add_argument("--compile", action="store_true",
                        help="also time the twins under torch.compile (Inductor; torch 2.x): the peer a "
                             "PyTorch 2 user would run; compilation happens in the warm-up steps")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: %s" % ", ".join(f"{k} {v}" for k, v in QUICK.items()))
    parser.add_argument("--json", metavar="FILE", help="write all results here")
    parser.add_argument("--check-params-only", action="store_true",
                        help="only compare parameter counts with `biaslab summary` (no timing)")
    args = parser.parse_args()
    models = csv_list(args.models, list(MODELS), "models")
    precisions = csv_list(args.precisions, ["fp32", "bf16"], "precisions")
    if args.quick:
        for key, value in QUICK.items():
            if key in ("steps", "warmup", "repeats") or getattr(args, key) is None:
                setattr(args, key, value)
    if args.threads is None:
        args.threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if args.compile and not hasattr(torch, "compile"):
        raise SystemExit(f"--compile: torch {torch.__version__} has no torch.compile (it needs torch 2.x: "
                         f"run this script with .venv-torch/bin/python, see scripts/setup.sh --torch pip)")
    if args.attention == "fused" and not has_sdpa():
        raise SystemExit(f"--attention fused: torch {torch.__version__} has no scaled_dot_product_attention")

    biaslab = Biaslab(args.biaslab)
    device = torch.device(args.device)

    # Parameter counts first: a wrong twin fails before anything is timed.
    configs, ok = {}, True
    for name in models:
        summary = biaslab.summary(name)
        try:
            configs[name] = biaslab.model_config(name)
            c, s, _ = summary["input"]
            twin = build_twin(configs[name], c, s, summary["num_classes"], fused=False)
        except TwinError as e:
            print(f"{name}: {e}", file=sys.stderr)
            sys.exit(1)
        ok = check_params(name, twin, summary) and ok
        if args.check_params_only:
            # A forward pass of two images, as the benchmark will run it.
            for precision in precisions:
                with torch.no_grad(), autocast(precision, torch.device("cpu")):
                    out = twin.eval()(torch.randn(2, c, s, s))
                assert out.shape == (2, summary["num_classes"]), (name, precision, tuple(out.shape))
    if not ok:
        print("error: the PyTorch twins do not match biaslab's models (see above)", file=sys.stderr)
        sys.exit(1)
    if args.check_params_only:
        return

    sets = [f"runtime.threads={args.threads}", f"runtime.device={args.device}"]
    if args.batch_size:
        sets.append(f"train.batch_size={args.batch_size}")
    if args.eval_batch_size:
        sets.append(f"train.eval_batch_size={args.eval_batch_size}")
    torch.set_num_threads(args.threads)
    rows, libtorch, warned = [], None, set()
    for name in models:
        for precision in precisions:
            bench = biaslab.bench(name, sets + [f"train.precision={precision}"], args.steps, args.warmup, args.repeats)
            libtorch = bench.get("libtorch_version", libtorch)
            if libtorch and release(libtorch) != release(torch.__version__) and libtorch not in warned:
                warned.add(libtorch)
                print(f"warning: biaslab runs LibTorch {libtorch}, this Python torch {torch.__version__}",
                      file=sys.stderr)
            if bench.get("threads", args.threads) != args.threads:
                print(f"warning: biaslab ran {bench['threads']} threads, asked for {args.threads}", file=sys.stderr)
            if args.attention == "auto":
                fused = has_sdpa() and (libtorch is None or int(release(libtorch).split(".")[0]) >= 2)
            else:
                fused = args.attention == "fused"
            input_ = bench["input"]
            torch.manual_seed(0)
            twin = build_twin(configs[name], input_["channels"], input_["image_size"], input_["num_classes"], fused)
            if count_params(twin) != bench["model"]["params"]:
                print(f"{name}: biaslab bench reports {bench['model']['params']:,} parameters, "
                      f"the PyTorch twin has {count_params(twin):,}", file=sys.stderr)
                sys.exit(1)
            try:
                pt = time_pytorch(twin, bench, device, args.warmup, args.steps, args.repeats,
                                  args.pytorch_channels_last and bench.get("memory_format") == "channels_last")
            except TwinError as e:
                print(f"{name}: {e}", file=sys.stderr)
                sys.exit(1)
            ptc = None
            if args.compile:
                torch.manual_seed(0)
                twin_c = build_twin(configs[name], input_["channels"], input_["image_size"], input_["num_classes"],
                                    fused)
                ptc = time_pytorch(twin_c, bench, device, max(args.warmup, 3), args.steps, args.repeats,
                                   args.pytorch_channels_last and bench.get("memory_format") == "channels_last",
                                   compiled=True)
            bl = {phase: bench[phase]["images_per_s"] for phase in ("train", "infer")}
            rows.append({
                "model": name, "precision": precision, "params": bench["model"]["params"],
                "attention": "fused" if fused else "manual",
                "memory_format": {"biaslab": bench.get("memory_format", "contiguous"),
                                  "pytorch": "channels_last" if args.pytorch_channels_last
                                  and bench.get("memory_format") == "channels_last" else "contiguous"},
                "biaslab": bl, "pytorch": pt,
                "ratio": {phase: ratio(bl[phase], pt[phase]["images_per_s"]) for phase in bl},
                "bench": bench,
            })
            print(f"{name} {precision}: train {bl['train']:.0f} vs {pt['train']['images_per_s']:.0f} img/s, "
                  f"infer {bl['infer']:.0f} vs {pt['infer']['images_per_s']:.0f} img/s (biaslab vs PyTorch)",
                  file=sys.stderr)
            if ptc:
                rows[-1]["pytorch_compiled"] = ptc
                rows[-1]["ratio_compiled"] = {phase: ratio(bl[phase], ptc[phase]["images_per_s"]) for phase in bl}
                print(f"{name} {precision}: train {bl['train']:.0f} vs {ptc['train']['images_per_s']:.0f} img/s, "
                      f"infer {bl['infer']:.0f} vs {ptc['infer']['images_per_s']:.0f} img/s "
                      f"(biaslab vs PyTorch, torch.compile)", file=sys.stderr)

    attention = sorted({r["attention"] for r in rows})
    header = (f"biaslab (LibTorch {libtorch or '?'}) vs PyTorch {torch.__version__} (Python "
              f"{sys.version.split()[0]}), {args.device}, {args.threads} thread{'s' if args.threads != 1 else ''}, "
              f"attention "
              f"{'/'.join(attention)}; warm-up {args.warmup}, {args.repeats} x {args.steps} steps")
    print_table(rows, header)
    for r in rows:
        r["mfu"] = mfu(r)
    cpu = rows[0]["bench"].get("cpu", {}) if rows else {}
    print_mfu(rows, f"{cpu.get('model', '?')}: {' '.join(cpu.get('isa', []))}")
    if args.json:
        result = {
            "torch_version": torch.__version__, "libtorch_version": libtorch, "python": sys.executable,
            "threads": args.threads, "device": args.device,
            "settings": {"warmup": args.warmup, "steps": args.steps, "repeats": args.repeats},
            "results": rows,
        }
        Path(args.json).write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
