#!/usr/bin/env python3
"""The size rules of docs/design.md section 1, checked: no source file of the library
(src/ and include/mantissa/) over 600 lines, and no layer over a quarter of the library's
lines (a layer's lines: src/<layer>/ and include/mantissa/<layer>/; the root headers
include/mantissa/*.hpp count as the layer `mantissa`). Prints every layer's share; on a
breach, one line per file or layer that breaks a rule, naming it and its figure.

Usage: check_sizes.py [ROOT]   (ROOT: the repository; default: this file's parent's parent)
Exit 0 when the tree keeps the rules, 1 otherwise.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from check_layers import SOURCE_SUFFIXES, layer_of  # noqa: E402 (the same layer of a file)

MAX_FILE_LINES = 600
MAX_LAYER_SHARE = 0.25


def library_files(root):
    """(relative path, line count) of every source file of src/ and include/mantissa/."""
    for top in ("src", os.path.join("include", "mantissa")):
        base = os.path.join(root, top)
        for folder, dirs, names in os.walk(base):
            dirs.sort()
            for name in sorted(names):
                if not name.endswith(SOURCE_SUFFIXES):
                    continue
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    lines = f.read().count(b"\n")
                yield os.path.relpath(path, root).replace(os.sep, "/"), lines


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, ".."))
    files = list(library_files(root))
    total = sum(n for _, n in files)
    if total == 0:
        print(f"check_sizes: no source lines under {root}/src or {root}/include/mantissa")
        return 1
    layers = {}
    for rel, n in files:
        layer = layer_of(rel) or rel.split("/")[1]
        layers[layer] = layers.get(layer, 0) + n
    problems = []
    for rel, n in files:
        if n > MAX_FILE_LINES:
            problems.append(f"{rel}: {n} lines (a file holds at most {MAX_FILE_LINES}: split it "
                            "by purpose)")
    ranked = sorted(layers.items(), key=lambda kv: (-kv[1], kv[0]))
    for layer, n in ranked:
        if n > MAX_LAYER_SHARE * total:
            problems.append(f"layer '{layer}': {n} of {total} lines, {100.0 * n / total:.1f}% "
                            f"(a layer holds at most {100 * MAX_LAYER_SHARE:.0f}% of the "
                            "library: give part of it a layer of its own)")
    largest = max(files, key=lambda f: (f[1], f[0]))
    shares = ", ".join(f"{layer} {100.0 * n / total:.1f}%" for layer, n in ranked)
    print(f"{total} lines in {len(files)} files; the largest file {largest[0]} ({largest[1]} "
          f"lines); layers: {shares}")
    for p in problems:
        print(p)
    if problems:
        print(f"check_sizes: {len(problems)} problem(s)")
        return 1
    print(f"sizes keep the rules (files <= {MAX_FILE_LINES} lines, layers <= "
          f"{100 * MAX_LAYER_SHARE:.0f}%)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
