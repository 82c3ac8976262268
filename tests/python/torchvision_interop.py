"""The Python half of biaslab's torchvision interop tests (tests/weights_test.cpp).

  make DIR NAME     builds torchvision's NAME (resnet18 | vit_b_16) with random weights and
                    writes DIR/NAME.state_dict.pt  torch.save(dict(model.state_dict()))
                          DIR/NAME.script.pt      torch.jit.script(model).save(...)
                          DIR/NAME.io.pt          {"input": x, "output": model(x)}
  cuda_tagged FILE  writes a torch.save'd dict of two tensors whose storages say they were
                    saved from cuda:0 (what a GPU-trained model's state dict holds), values
                    weight = arange(6).view(2, 3), bias = ones(2)
  archive DIR NAME FILE  loads FILE (the TorchScript archive `biaslab convert` wrote from
                    DIR/NAME's weights) and prints the max |logit difference| to
                    torchvision's output on DIR/NAME.io.pt's input
  check DIR NAME    loads DIR/NAME.biaslab.pt (a state dict biaslab wrote with torchvision
                    names) into torchvision's NAME with load_state_dict(strict=True) and
                    compares its output on DIR/NAME.biaslab_io.pt's input with biaslab's.
Exit status 0 on success, 77 when torch or torchvision is not importable.
"""
import sys

try:
    import torch
    import torchvision
except ImportError as e:
    print(f"SKIP: torch/torchvision not importable by {sys.executable}: {e}")
    sys.exit(77)

NUM_CLASSES = 10
IMAGE_SIZE = {"resnet18": 64, "vit_b_16": 32}


def build(name):
    if name == "resnet18":
        return torchvision.models.resnet18(num_classes=NUM_CLASSES)
    if name == "vit_b_16":
        return torchvision.models.vit_b_16(num_classes=NUM_CLASSES, image_size=IMAGE_SIZE[name])
    raise SystemExit(f"unknown model {name}")


def make(directory, name):
    torch.manual_seed(0)
    model = build(name)
    with torch.no_grad():  # every weight matters: no zero biases, unit norms or fresh statistics
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
        for module in model.modules():
            if isinstance(module, torch.nn.BatchNorm2d):
                module.running_mean.normal_(0, 0.1)
                module.running_var.uniform_(0.5, 1.5)
    model.eval()
    x = torch.randn(2, 3, IMAGE_SIZE[name], IMAGE_SIZE[name])
    with torch.no_grad():
        y = model(x)
    torch.save(dict(model.state_dict()), f"{directory}/{name}.state_dict.pt")
    torch.jit.script(model).save(f"{directory}/{name}.script.pt")
    torch.save({"input": x, "output": y}, f"{directory}/{name}.io.pt")
    print(f"torchvision {torchvision.__version__}: wrote {name} ({sum(p.numel() for p in model.parameters())} parameters)")


def check(directory, name):
    model = build(name)
    # weights_only: the files biaslab writes hold nothing but tensors (the default since PyTorch 2.6)
    model.load_state_dict(torch.load(f"{directory}/{name}.biaslab.pt", weights_only=True), strict=True)
    model.eval()
    io = torch.load(f"{directory}/{name}.biaslab_io.pt", weights_only=True)
    with torch.no_grad():
        y = model(io["input"])
    diff = (y - io["output"]).abs().max().item()
    print(f"torchvision {name} with biaslab's weights: max |output difference| {diff:.3g}")
    assert diff <= 1e-4, diff
    print("OK")


def archive(directory, name, path):
    module = torch.jit.load(path)
    io = torch.load(f"{directory}/{name}.io.pt", weights_only=True)
    with torch.no_grad():
        y = module(io["input"])
    print(f"{path} (torchvision {name}'s weights): max |logit difference| {(y - io['output']).abs().max().item():.9g}")


def cuda_tagged(path):
    import io
    import zipfile
    buffer = io.BytesIO()
    torch.save({"weight": torch.arange(6.0).view(2, 3), "bias": torch.ones(2)}, buffer)
    cpu = b"X\x03\x00\x00\x00cpu"  # the storages' location, a pickled unicode string
    cuda = b"X\x06\x00\x00\x00cuda:0"
    with zipfile.ZipFile(buffer) as src, zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("data.pkl"):
                assert data.count(cpu) == 1, data
                data = data.replace(cpu, cuda)
            dst.writestr(name, data)
    print(f"wrote {path} (storages tagged cuda:0)")


if __name__ == "__main__":
    torch.set_num_threads(1)
    if sys.argv[1] == "cuda_tagged":
        cuda_tagged(sys.argv[2])
    elif sys.argv[1] == "archive":
        archive(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        {"make": make, "check": check}[sys.argv[1]](sys.argv[2], sys.argv[3])
