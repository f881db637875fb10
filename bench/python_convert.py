#!/usr/bin/env python3
"""Converting 64 MiB of float32 to bfloat16, float16 and float8_e4m3 (with --formats all
also float8_e5m2, float6_e2m3, float6_e3m2, float4_e2m1 and float8_e8m0, one byte per code
on both sides) and back: mantissa (the Python package) against numpy / ml_dtypes `astype`,
in GB/s: bytes read plus bytes written (64 + 32 MiB for bfloat16, as docs/PERFORMANCE.md
counts conversions) over the best time of --repeats calls.

    python3 bench/python_convert.py [--mib 64] [--repeats 5] [--formats main|all|LIST]

Three tables. "new result": each call allocates its result, as `astype` does; mantissa's
large results reuse the pages of the previous call's freed result (tensor/page_memory.hpp),
while numpy's come from new pages the kernel zeroes as the conversion first touches them.
"new result, fresh pages": the same with mantissa's kept pages released before each timed
call (outside the timing), so both sides pay the kernel's page faults. "into out": the result goes into an array
allocated once (mantissa's out=; np.copyto for the peer, the same cast as astype). The
peer converts on one thread, mantissa on OMP_NUM_THREADS (its default: every core). Each conversion is checked bit for bit against the peer's
before it is timed. Needs the package (scripts/install-python.sh or pip install .) and
ml_dtypes.
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
# The other formats both have, where this ml_dtypes has them (--formats all).
for fmt, name in (("float8_e5m2", "float8_e5m2"), ("float6_e2m3", "float6_e2m3fn"),
                  ("float6_e3m2", "float6_e3m2fn"), ("float4_e2m1", "float4_e2m1fn"),
                  ("float8_e8m0", "float8_e8m0fnu")):
    if hasattr(ml_dtypes, name):
        PEERS[fmt] = (getattr(ml_dtypes, name), "ml_dtypes")
MAIN = ("bfloat16", "float16", "float8_e4m3")


def best_seconds(fn, repeats, setup=None):
    best = float("inf")
    for _ in range(repeats):
        if setup is not None:
            setup()
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cases(x, fmt, dtype):
    """(direction, result kind, mantissa's call, the peer's call, setup before each of
    mantissa's calls) for one format."""
    uint = np.uint8 if np.dtype(dtype).itemsize == 1 else np.uint16
    # ml_dtypes' float8_e4m3fn turns overflow into NaN: mantissa's saturate=False.
    sat = False if fmt == "float8_e4m3" else None
    bits = mantissa.encode(x, fmt, saturate=sat)
    narrow = x.astype(dtype)
    if not np.array_equal(bits, narrow.view(uint)):
        raise SystemExit(f"{fmt}: mantissa and the peer disagree on encode")
    if not np.array_equal(mantissa.decode(bits, fmt), narrow.astype(np.float32), equal_nan=True):
        raise SystemExit(f"{fmt}: mantissa and the peer disagree on decode")
    bits_out, narrow_out = np.empty_like(bits), np.empty_like(narrow)
    wide_out, wide_out2 = np.empty_like(x), np.empty_like(x)
    fresh = mantissa.release_kept_pages
    return [
        ("encode", "new result", lambda: mantissa.encode(x, fmt, saturate=sat),
         lambda: x.astype(dtype), None),
        ("decode", "new result", lambda: mantissa.decode(bits, fmt),
         lambda: narrow.astype(np.float32), None),
        ("encode", "new result, fresh pages", lambda: mantissa.encode(x, fmt, saturate=sat),
         lambda: x.astype(dtype), fresh),
        ("decode", "new result, fresh pages", lambda: mantissa.decode(bits, fmt),
         lambda: narrow.astype(np.float32), fresh),
        ("encode", "into out", lambda: mantissa.encode(x, fmt, saturate=sat, out=bits_out),
         lambda: np.copyto(narrow_out, x, casting="unsafe"), None),
        ("decode", "into out", lambda: mantissa.decode(bits, fmt, out=wide_out),
         lambda: np.copyto(wide_out2, narrow), None),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=64, help="float32 data per conversion (MiB)")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls; the best counts")
    parser.add_argument("--formats", default="main",
                        help="'main' (bfloat16, float16, float8_e4m3), 'all' (every format "
                             "both have) or a comma-separated list")
    args = parser.parse_args()
    if args.formats == "main":
        formats = list(MAIN)
    elif args.formats == "all":
        formats = list(PEERS)
    else:
        formats = args.formats.split(",")
        unknown = [f for f in formats if f not in PEERS]
        if unknown:
            parser.error(f"--formats: {', '.join(unknown)} not among {', '.join(PEERS)}")
    n = args.mib * (1 << 20) // 4
    x = (np.random.default_rng(0).standard_normal(n) * 8).astype(np.float32)
    print(f"{args.mib} MiB of float32 ({n} values), best of {args.repeats}; numpy "
          f"{np.__version__}, ml_dtypes {ml_dtypes.__version__}, Python "
          f"{platform.python_version()}")
    rows = []
    for fmt in formats:
        dtype, who = PEERS[fmt]
        gb = (x.nbytes + x.nbytes * np.dtype(dtype).itemsize // 4) / 1e9  # read + written
        for direction, kind, ours, theirs, setup in cases(x, fmt, dtype):
            t_ours = best_seconds(ours, args.repeats, setup)
            t_peer = best_seconds(theirs, args.repeats)
            rows.append((kind, fmt, direction, gb / t_ours, gb / t_peer, who))
    for kind in ("new result", "new result, fresh pages", "into out"):
        print(f"\n{kind}: GB/s")
        print(f"{'format':<12} {'direction':<9} {'mantissa':>9} {'peer':>8} {'ratio':>6}  peer")
        for k, fmt, direction, r_ours, r_peer, who in rows:
            if k == kind:
                print(f"{fmt:<12} {direction:<9} {r_ours:>9.2f} {r_peer:>8.2f} "
                      f"{r_ours / r_peer:>5.1f}x  {who}")


if __name__ == "__main__":
    main()
