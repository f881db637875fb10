#!/usr/bin/env python3
"""The layer rule of docs/design.md, checked: reads every #include of src/, include/ and apps/
and fails on an upward include (a layer using one above it) or on a private header of one
layer included from another, naming the file and the line.

Usage: check_layers.py [ROOT]   (ROOT: the repository; default: this file's parent's parent)
Exit 0 when the tree keeps the rule, 1 with one line per breach otherwise.
"""
import os
import re
import sys

# Bottom to top: a layer may include its own headers and the public headers of the layers
# before it, never those after it. `mantissa` is the root headers (include/mantissa/*.hpp:
# error type, names, file helpers), usable from every layer. `support` holds private
# header-only helpers (src/support/) that every layer of the library may use; it uses only
# the root. `apps` is the command-line program, above the whole library.
LAYERS = [
    "mantissa",
    "support",
    "numerics",
    "tensor",
    "precision",
    "kernels",
    "quant",
    "autograd",
    "nn",
    "optim",
    "amp",
    "data",
    "dist",
    "config",
    "report",
    "train",
    "bench",
    "apps",
]
RANK = {name: i for i, name in enumerate(LAYERS)}
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h", ".cc")
INCLUDE_LINE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]')


class Header:
    """Where an include lands: its layer, and whether it is that layer's public header."""

    def __init__(self, layer, public, path):
        self.layer, self.public, self.path = layer, public, path


def layer_of(rel):
    """The layer a file of the tree belongs to, or None when it is in none."""
    parts = rel.split("/")
    if parts[0] == "src" and len(parts) > 2:
        return parts[1]
    if parts[:2] == ["include", "mantissa"]:
        return parts[2] if len(parts) > 3 else "mantissa"
    if parts[0] == "apps":
        return "apps"
    return None


def resolve(root, rel, bracket, target):
    """The header an include names, as the build finds it, or None for one outside the tree
    (the standard library, third-party headers)."""
    if target.startswith("mantissa/"):
        path = "include/" + target
        if not os.path.isfile(os.path.join(root, path)):
            return Header("?", True, path)
        return Header(layer_of(path), True, path)
    if bracket == "<":
        return None
    # Quoted: next to the including file first, then under src/ (the library's private
    # include directory).
    here = os.path.dirname(rel)
    for base in (here, "src"):
        path = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(os.path.join(root, path)):
            return Header(layer_of(path), path.startswith("include/"), path)
    return Header("?", False, target)


def check_file(root, rel):
    """Every breach in one file, as 'file:line: what'."""
    layer = layer_of(rel)
    breaches = []
    if layer not in RANK:
        return [f"{rel}:1: layer '{layer}' is not in the layer list of tools/check_layers.py "
                "(add it there and to docs/design.md)"]
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        lines = f.readlines()
    for number, line in enumerate(lines, start=1):
        m = INCLUDE_LINE.match(line)
        if not m:
            continue
        bracket, target = m.group(1), m.group(2)
        header = resolve(root, rel, bracket, target)
        if header is None:
            continue
        where = f"{rel}:{number}: #include {bracket}{target}{'>' if bracket == '<' else chr(34)}"
        if header.layer == "?":
            breaches.append(f"{where}: no such header in the tree")
            continue
        if header.layer not in RANK:
            breaches.append(f"{where}: '{header.path}' is in no known layer")
            continue
        if rel.startswith("include/") and not header.public:
            breaches.append(f"{where}: a public header includes the private header "
                            f"'{header.path}' (installed headers cannot reach src/)")
            continue
        if not header.public and header.layer not in (layer, "support"):
            breaches.append(f"{where}: private header of layer '{header.layer}' included from "
                            f"layer '{layer}' (make it public under include/mantissa/"
                            f"{header.layer}/ or move it)")
            continue
        if RANK[header.layer] > RANK[layer]:
            breaches.append(f"{where}: upward include: layer '{layer}' may not use layer "
                            f"'{header.layer}' (above it in the order of docs/design.md)")
    return breaches


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(__file__), os.pardir))
    files = []
    for top in ("src", "include", "apps"):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in names:
                if name.endswith(SOURCE_SUFFIXES):
                    files.append(os.path.relpath(os.path.join(dirpath, name), root))
    if not files:
        print(f"check_layers: no sources under {root}/src, include, apps", file=sys.stderr)
        return 1
    breaches = []
    for rel in sorted(files):
        breaches.extend(check_file(root, rel))
    for b in breaches:
        print(b)
    if breaches:
        print(f"check_layers: {len(breaches)} include(s) break the layer order "
              f"({len(files)} files read)")
        return 1
    print(f"check_layers: {len(files)} files keep the layer order")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
