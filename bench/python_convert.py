#!/usr/bin/env python3
"""Converting 64 MiB of float32 to bfloat16, float16 and float8_e4m3 and back: mantissa
(the Python package) against numpy / ml_dtypes `astype`, in GB/s: bytes read plus bytes
written (64 + 32 MiB for bfloat16, as docs/PERFORMANCE.md counts conversions) over the best
time of --repeats calls; both sides allocate their result, as `astype` does.

    python3 bench/python_convert.py [--mib 64] [--repeats 5]

Needs the package (scripts/install-python.sh or pip install .) and ml_dtypes. Each
conversion is also checked bit for bit against the peer's before it is timed. One thread
each: neither numpy's astype nor mantissa's conversions use more.
"""

import argparse
import platform
import time

import ml_dtypes
import numpy as np

import mantissa

PEERS = {  # mantissa's format: (the peer's dtype, who provides it)
    "bfloat16": (ml_dtypes.bfloat16, "ml_dtypes"),
    "float16": (np.float16, "numpy"),
    "float8_e4m3": (ml_dtypes.float8_e4m3fn, "ml_dtypes"),
}


def best_seconds(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="float32 data per conversion (MiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls; the best counts")
    args = parser.parse_args()
    n = args.mib * (1 << 20) // 4
    x = (np.random.default_rng(0).standard_normal(n) * 8).astype(np.float32)
    print(f"{args.mib} MiB of float32 ({n} values), best of {args.repeats}; numpy "
          f"{np.__version__}, ml_dtypes {ml_dtypes.__version__}, Python {platform.python_version()}")
    print(f"{'format':<12} {'direction':<10} {'mantissa GB/s':>14} {'peer GB/s':>10} "
          f"{'ratio':>6}  peer")
    for fmt, (dtype, who) in PEERS.items():
        uint = np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16
        # ml_dtypes' float8_e4m3fn turns overflow into NaN: mantissa's saturate=False.
        sat = False if fmt == "float8_e4m3" else None
        bits = mantissa.encode(x, fmt, saturate=sat)
        narrow = x.astype(dtype)
        if not np.array_equal(bits, narrow.view(uint)):
            raise SystemExit(f"{fmt}: mantissa and {who} disagree on encode")
        if not np.array_equal(mantissa.decode(bits, fmt), narrow.astype(np.float32)):
            raise SystemExit(f"{fmt}: mantissa and {who} disagree on decode")
        cases = [
            ("encode", lambda: mantissa.encode(x, fmt, saturate=sat), lambda: x.astype(dtype)),
            ("decode", lambda: mantissa.decode(bits, fmt), lambda: narrow.astype(np.float32)),
        ]
        gb = (x.nbytes + narrow.nbytes) / 1e9  # read plus written, either direction
        for direction, ours, theirs in cases:
            t_ours = best_seconds(ours, args.repeats)
            t_theirs = best_seconds(theirs, args.repeats)
            print(f"{fmt:<12} {direction:<10} {gb / t_ours:>14.2f} {gb / t_theirs:>10.2f} "
                  f"{t_theirs / t_ours:>5.1f}x  {who}")


if __name__ == "__main__":
    main()
