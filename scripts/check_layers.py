#!/usr/bin/env python3
"""Check the layering of src/ that docs/ARCHITECTURE.md describes.

Reads every `#include "folder/file.h"` of src/*/ and prints the folder -> folder include
matrix (the number of include lines, bottom layer first). Exits 1 when
  - a folder includes a folder that ALLOWED (below) does not allow, other than through
    one of the EXCEPTIONS (a named header);
  - an exception's header itself includes more than it is allowed to;
  - a file under models/ other than the registry includes config/, or engine/, export/
    or cli/ includes a header of models/ other than its interface (MODEL_INTERFACE);
  - an external library, or the header that wraps it, is included outside its place
    (LIBRARY_RULES, HEADER_RULES: yaml-cpp, CLI11, OpenCV, c10d);
  - a folder of src/ is missing from the table, or an include names no folder.
An exception no longer used is reported as a note (remove it here and in the page).

Usage: scripts/check_layers.py            (run from anywhere; only the standard library)
Keep ALLOWED and EXCEPTIONS equal to the tables of docs/ARCHITECTURE.md.
"""
import collections
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"

# Bottom to top.
LAYERS = ["core", "config", "data", "distributed", "plot", "layers", "models", "engine",
          "export", "analysis", "sweep", "cli"]
ALIASES = {}

# Folder -> the folders it may include (its own is always allowed).
ALLOWED = {
    "core": set(),
    "config": {"core"},
    "data": {"core", "config"},
    "distributed": {"core"},
    "plot": {"core"},
    "layers": {"core"},
    "models": {"core", "config", "layers"},  # config: models/registry.* only (below)
    "engine": {"core", "config", "data", "distributed", "models"},
    "export": {"core", "config", "data", "engine", "models"},
    "analysis": {"core", "config", "data", "engine", "layers", "models", "plot"},
    "sweep": {"core", "config", "plot"},
    "cli": {"core", "config", "data", "distributed", "engine", "export", "models", "sweep", "analysis"},
}

# Includes against the layering, allowed one header at a time. Each header (and the .cpp
# of the same name) may itself include only the folders given with it (its own folder
# only when named: otherwise just the other headers listed here).
EXCEPTIONS = {
    # The TorchScript kit every layer and model implements beside its forward; it
    # depends on core/ only, so no cycle comes with it.
    ("layers", "export/scriptable.h"): {"core"},
    ("layers", "export/script_builder.h"): {"core"},
    ("models", "export/scriptable.h"): {"core"},
    ("models", "export/script_builder.h"): {"core"},
    # model.init_from (engine/learner.cpp) reads Python / torchvision / timm state dicts;
    # export/weights.* depends on core/ only.
    ("engine", "export/weights.h"): {"core"},
    # The config checks ask the synthetic format for a task's class count and smallest
    # image size (config/checks.cpp); data/synthetic.h sees config/config.h through
    # data/dataset.h, which is allowed to data/.
    ("config", "data/synthetic.h"): {"core", "config", "data"},
    # The config checks run each model family's rules (config/checks.cpp), which live
    # beside the family and see only config/checker.h and config/config.h.
    ("config", "models/model_checks.h"): {"core", "config"},
}

# Files of a folder allowed to include another folder, where only some may.
ONLY_FROM = {
    ("models", "config"): {"models/registry.h", "models/registry.cpp", "models/model_checks.h",
                           "models/resnet_checks.cpp", "models/vit_checks.cpp"},
}

# Headers of a folder that another may include, where only some may: the trainer,
# evaluation, export and the commands see a model through its interface, never its type.
MODEL_INTERFACE = {"models/classifier.h", "models/registry.h", "models/summary.h"}
ONLY_HEADERS = {
    ("engine", "models"): MODEL_INTERFACE,
    ("export", "models"): MODEL_INTERFACE,
    ("cli", "models"): MODEL_INTERFACE,
}

# External headers: (regex on the <...> include, rule, test(file relative to src/)).
LIBRARY_RULES = [
    (r"^yaml-cpp/", "yaml-cpp only in config/yaml_io.h and config/flat.h",
     lambda f: f in ("config/yaml_io.h", "config/flat.h")),
    (r"^CLI/", "CLI11 only in cli/", lambda f: f.startswith("cli/")),
    (r"^opencv2/", "OpenCV only in data/ and plot/", lambda f: f.split("/")[0] in ("data", "plot")),
    (r"^torch/csrc/distributed/", "c10d's headers only in distributed/ and the c10d compatibility header",
     lambda f: folder_of(f) == "distributed" or "c10d" in pathlib.PurePath(f).name),
]
# Project headers with a restricted set of includers: (regex on the "..." include, rule, test).
HEADER_RULES = [
    (r"^config/yaml_io\.h$", "config/yaml_io.h (yaml-cpp) only in config/ and sweep/spec.cpp",
     lambda f: f.startswith("config/") or f == "sweep/spec.cpp"),
    (r"^config/flat\.h$", "config/flat.h (yaml-cpp) only inside config/", lambda f: f.startswith("config/")),
    (r"c10d[^/]*$", "the c10d compatibility header only in distributed/",
     lambda f: folder_of(f) == "distributed" or "c10d" in pathlib.PurePath(f).name),
]

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def folder_of(rel):
    head = rel.split("/")[0]
    return ALIASES.get(head, head)


def normalise(include):
    """An include path with the old folder name replaced ("dist/env.h" -> "distributed/env.h")."""
    head, _, rest = include.partition("/")
    return ALIASES.get(head, head) + "/" + rest if rest else include


def sources():
    for path in sorted(SRC.rglob("*")):
        rel = path.relative_to(SRC).as_posix()
        if path.is_file() and "/" in rel and re.search(r"\.(h|hpp|cpp|h\.in)$", rel):
            yield rel, path


def main():
    problems, notes = [], []
    for f, below in ALLOWED.items():
        for g in below:
            if LAYERS.index(g) >= LAYERS.index(f):
                problems.append(f"scripts/check_layers.py: ALLOWED lets {f}/ include {g}/, which is not below it")
    matrix = collections.defaultdict(collections.Counter)
    bad = collections.defaultdict(collections.Counter)  # includes against the table
    used_exceptions = set()
    includes_of = {}  # normalised file -> [(line, kind, include)]
    real = {}  # normalised file -> its path under src/
    for rel, path in sources():
        items = []
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if m:
                items.append((n, m.group(1), m.group(2)))
        includes_of[normalise(rel)] = items
        real[normalise(rel)] = rel

    folders = sorted({folder_of(f) for f in includes_of})
    for f in folders:
        if f not in ALLOWED:
            problems.append(f"src/{f}/: a folder the layer table does not know; add it to "
                            "scripts/check_layers.py and docs/ARCHITECTURE.md")

    for rel, items in includes_of.items():
        src_folder = folder_of(rel)
        for n, kind, inc in items:
            where = f"src/{real[rel]}:{n}"
            if kind == "<":
                for pattern, rule, ok in LIBRARY_RULES:
                    if re.search(pattern, inc) and not ok(rel):
                        problems.append(f"{where}: <{inc}>: {rule}")
                continue
            target = normalise(inc)
            for pattern, rule, ok in HEADER_RULES:
                if re.search(pattern, target) and not ok(rel):
                    problems.append(f'{where}: "{inc}": {rule}')
            if "/" not in target:
                problems.append(f'{where}: "{inc}": name the folder (#include "folder/file.h")')
                continue
            dst = folder_of(target)
            if dst == src_folder:
                continue
            matrix[src_folder][dst] += 1
            if dst in ALLOWED.get(src_folder, set()):
                only = ONLY_FROM.get((src_folder, dst))
                if only and rel not in only:
                    bad[src_folder][dst] += 1
                    problems.append(f'{where}: "{inc}": in {src_folder}/ only {", ".join(sorted(only))} '
                                    f"may include {dst}/")
                headers = ONLY_HEADERS.get((src_folder, dst))
                if headers and target not in headers:
                    bad[src_folder][dst] += 1
                    problems.append(f'{where}: "{inc}": {src_folder}/ may include of {dst}/ only '
                                    f"{', '.join(sorted(headers))}")
                continue
            if (src_folder, target) in EXCEPTIONS:
                used_exceptions.add((src_folder, target))
                continue
            bad[src_folder][dst] += 1
            problems.append(f'{where}: "{inc}": {src_folder}/ may not include {dst}/ '
                            f"(allowed: {', '.join(sorted(ALLOWED.get(src_folder, set()))) or 'nothing'})")

    # An exception's header (and its .cpp) must stay as low as the exception says.
    for (src_folder, header), may in sorted(EXCEPTIONS.items()):
        own = folder_of(header)
        for rel in (header, re.sub(r"\.h$", ".cpp", header)):
            for n, kind, inc in includes_of.get(rel, []):
                if kind != '"' or "/" not in inc:
                    continue
                target = normalise(inc)
                dst = folder_of(target)
                if dst == own and own not in may and any(h == target for (_, h) in EXCEPTIONS):
                    continue
                if dst not in may:
                    problems.append(f'src/{real[rel]}:{n}: "{inc}": {header} is included by {src_folder}/ '
                                    f"as an exception and may include only {', '.join(sorted(may))}/")
        if (src_folder, header) not in used_exceptions:
            notes.append(f"note: the exception {src_folder}/ -> {header} is no longer used; remove it "
                         "from scripts/check_layers.py and docs/ARCHITECTURE.md")

    order = [f for f in LAYERS if f in folders] + [f for f in folders if f not in LAYERS]
    width = max(len(f) for f in order)
    print("include lines from a folder (row) into another (column); "
          "* = only through an exception, ! = not allowed")
    print(" " * width + " " + " ".join(f"{f[:5]:>5}" for f in order))
    for row in order:
        cells = []
        for col in order:
            count = matrix[row][col]
            if row == col or not count:
                cells.append(f"{'.':>5}")
                continue
            mark = "!" if bad[row][col] else "" if col in ALLOWED.get(row, set()) else "*"
            cells.append(f"{str(count) + mark:>5}")
        print(f"{row:<{width}} " + " ".join(cells))
    print()
    for row in order:
        print(f"{row} -> {', '.join(c for c in order if matrix[row][c]) or '(nothing)'}")
    for note in notes:
        print(note)
    if problems:
        print()
        for p in problems:
            print(p)
        print(f"check_layers: {len(problems)} include(s) against the layering")
        return 1
    print(f"check_layers: {len(includes_of)} files, layering as in docs/ARCHITECTURE.md "
          f"({len(used_exceptions)} exceptions)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
