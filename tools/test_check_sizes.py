#!/usr/bin/env python3
"""check_sizes.py against planted trees: it must name a file over 600 lines and a layer over
a quarter of the library with its share, and must pass a tree that keeps both rules (a file
of exactly 600 lines, a layer of exactly 25%). Exit 0 when every case behaves, 1 naming the
case that did not."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from planted_trees import run_cases  # noqa: E402

CHECK = os.path.join(HERE, "check_sizes.py")


def lines(n):
    return "".join(f"int v{i} = {i};\n" for i in range(n))


# Four layers of 600 lines each: every one exactly 25%, the largest file exactly 600 lines;
# a CMakeLists.txt is not a source file and does not count.
GOOD = {
    "src/kernels/gemm.cpp": lines(600),
    "src/tensor/tensor.cpp": lines(400),
    "include/mantissa/tensor/tensor.hpp": lines(200),
    "src/quant/bands.cpp": lines(300),
    "src/quant/tiles.cpp": lines(300),
    "src/train/trainer.cpp": lines(600),
    "src/train/CMakeLists.txt": lines(5000),
}

CASES = [
    # (name, the tree's changes to GOOD (None: file removed), expected exit, texts the output
    # must hold)
    ("tree keeps the rules", {}, 0,
     ["2400 lines in 6 files", "kernels 25.0%", "tensor 25.0%", "sizes keep the rules"]),
    ("a file of 601 lines (its layer exactly a quarter)",
     {"src/kernels/gemm.cpp": lines(601), "src/tensor/tensor.cpp": lines(401),
      "src/quant/tiles.cpp": lines(301), "src/train/trainer.cpp": lines(401),
      "src/train/loop.cpp": lines(200)},
     1, ["src/kernels/gemm.cpp: 601 lines (a file holds at most 600", "1 problem"]),
    ("a public header of 601 lines",
     {"include/mantissa/tensor/tensor.hpp": lines(601), "src/tensor/tensor.cpp": None,
      "src/kernels/pack.cpp": lines(1), "src/quant/tiles.cpp": lines(301),
      "src/train/loop.cpp": lines(1)},
     1, ["include/mantissa/tensor/tensor.hpp: 601 lines", "1 problem"]),
    ("a layer over a quarter (public headers count)",
     {"include/mantissa/kernels/gemm.hpp": lines(1)},
     1, ["layer 'kernels': 601 of 2401 lines, 25.0", "1 problem"]),
    ("root headers are the layer 'mantissa'",
     {"include/mantissa/error.hpp": lines(1600)},
     1, ["layer 'mantissa': 1600 of 4000 lines, 40.0%"]),
    ("an empty tree", {k: "" for k in GOOD}, 1, ["check_sizes: no source lines"]),
]


def main():
    return run_cases(CHECK, GOOD, CASES)


if __name__ == "__main__":
    sys.exit(main())
