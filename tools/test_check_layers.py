#!/usr/bin/env python3
"""check_layers.py against planted trees: it must name file and line for an upward include,
a private header of another layer and a public header reaching into src/, and must pass a
tree that keeps the order. Exit 0 when every case behaves, 1 naming the case that did not."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from planted_trees import run_cases  # noqa: E402

CHECK = os.path.join(HERE, "check_layers.py")



# A tree that keeps the order: kernels uses tensor's public header and its own private one.
GOOD = {
    "include/mantissa/error.hpp": "#pragma once\n",
    "include/mantissa/tensor/tensor.hpp": "#pragma once\n#include \"mantissa/error.hpp\"\n",
    "include/mantissa/kernels/gemm.hpp": "#pragma once\n#include \"mantissa/tensor/tensor.hpp\"\n",
    "include/mantissa/train/trainer.hpp": "#pragma once\n#include \"mantissa/dist/comm.hpp\"\n",
    "include/mantissa/dist/comm.hpp": "#pragma once\n#include <vector>\n",
    "src/kernels/gemm.cpp": "#include \"mantissa/kernels/gemm.hpp\"\n#include \"pack.hpp\"\n",
    "src/kernels/pack.hpp": "#pragma once\n",
    "src/support/stats.hpp": "#pragma once\n",
    "src/tensor/tensor.cpp": "#include \"mantissa/tensor/tensor.hpp\"\n#include \"support/stats.hpp\"\n",
    "apps/main.cpp": "#include \"mantissa/train/trainer.hpp\"\n",
}

CASES = [
    # (name, changes to GOOD, expected exit, text each breach line must hold)
    ("tree keeps the order", {}, 0, []),
    ("upward include (tensor uses kernels)",
     {"src/tensor/tensor.cpp": "#include <cstdint>\n\n#include \"mantissa/kernels/gemm.hpp\"\n"},
     1, ["src/tensor/tensor.cpp:3:", "upward include", "'tensor' may not use layer 'kernels'"]),
    ("upward include (dist uses train)",
     {"include/mantissa/dist/comm.hpp": "#pragma once\n#include \"mantissa/train/trainer.hpp\"\n"},
     1, ["include/mantissa/dist/comm.hpp:2:", "upward include"]),
    ("private header of another layer",
     {"src/tensor/tensor.cpp": "#include \"kernels/pack.hpp\"\n"},
     1, ["src/tensor/tensor.cpp:1:", "private header of layer 'kernels'"]),
    ("public header includes a private one",
     {"include/mantissa/kernels/gemm.hpp": "#pragma once\n#include \"kernels/pack.hpp\"\n"},
     1, ["include/mantissa/kernels/gemm.hpp:2:", "private header"]),
    ("folder in no layer",
     {"src/extras/thing.cpp": "#include \"mantissa/error.hpp\"\n"},
     1, ["src/extras/thing.cpp:1:", "not in the layer list"]),
    ("missing header",
     {"src/kernels/gemm.cpp": "#include \"mantissa/kernels/nothing.hpp\"\n"},
     1, ["src/kernels/gemm.cpp:1:", "no such header"]),
]


def main():
    return run_cases(CHECK, GOOD, CASES)


if __name__ == "__main__":
    sys.exit(main())
