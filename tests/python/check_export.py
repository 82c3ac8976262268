"""Loads a biaslab TorchScript export with Python's torch.jit.load and checks it.

Usage: python3 check_export.py ARCHIVE...
Runs the archive on the check images it carries (biaslab/check.pt) and compares with
the native model's logits stored beside them; checks the metadata and that the code
names its submodules. Exit status 0 on success; 77 when torch is not importable.
"""
import io
import json
import sys

try:
    import torch
except ImportError as e:  # the caller reports a skip
    print(f"SKIP: torch is not importable by {sys.executable}: {e}")
    sys.exit(77)


def main(path):
    files = {"biaslab/meta.json": "", "biaslab/config.yaml": "", "biaslab/check.pt": ""}
    torch.set_num_threads(1)
    module = torch.jit.load(path, map_location="cpu", _extra_files=files)
    module.eval()
    meta = json.loads(files["biaslab/meta.json"])
    check = torch.load(io.BytesIO(files["biaslab/check.pt"]), weights_only=True)
    with torch.no_grad():
        logits = module(check["input"])
    diff = (logits - check["logits"]).abs().max().item()
    print(f"torch {torch.__version__}: {path}: {meta['family']} {meta['preset']}, "
          f"{len(meta['class_names'])} classes, max |logit difference| {diff:.3g}")
    assert logits.shape == check["logits"].shape, (logits.shape, check["logits"].shape)
    assert diff <= 1e-5, f"logits differ by {diff}"
    assert list(module.class_names) == meta["class_names"]
    assert module.image_size == meta["image_size"] and module.in_chans == meta["in_chans"]
    assert list(module.mean) == meta["mean"] and list(module.std) == meta["std"]
    assert b"model:" in files["biaslab/config.yaml"]
    assert "self.head" in module.code or "head = self.head" in module.code or "self.fc" in module.code \
        or "fc = self.fc" in module.code, module.code
    # A wrong input shape is refused with a message saying what is expected.
    try:
        module(torch.zeros(1, meta["in_chans"] + 1, meta["image_size"], meta["image_size"]))
    except Exception as e:  # torch.jit.Error
        assert "expected images of shape" in str(e), str(e)
    else:
        raise AssertionError("a wrong input shape was accepted")
    print("OK")


if __name__ == "__main__":
    for archive in sys.argv[1:]:
        main(archive)
