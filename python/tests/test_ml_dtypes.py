"""Bit identity with ml_dtypes (a test dependency) on the formats both have, nearest-even:
decode of every pattern, encode of sampled float32 values including every tie."""

import numpy as np
import pytest

import mantissa
import reference

ml_dtypes = pytest.importorskip("ml_dtypes")

SHARED = {
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float8_e4m3": ml_dtypes.float8_e4m3fn,
    "float8_e5m2": ml_dtypes.float8_e5m2,
}
UINT = {1: np.uint8, 2: np.uint16}


@pytest.mark.parametrize("fmt", SHARED)
def test_decode_every_pattern_matches(fmt):
    dtype = SHARED[fmt]
    uint = UINT[np.dtype(dtype).itemsize]
    patterns = np.arange(1 << (8 * np.dtype(dtype).itemsize)).astype(uint)
    got = mantissa.decode(patterns, fmt)
    want = patterns.view(dtype).astype(np.float32)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    np.testing.assert_array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))


@pytest.mark.parametrize("fmt", SHARED)
def test_encode_sampled_matches(fmt):
    dtype = SHARED[fmt]
    uint = UINT[np.dtype(dtype).itemsize]
    rng = np.random.default_rng(5)
    # Every float32 bit pattern class: uniformly random patterns (NaN, inf, subnormal, huge,
    # tiny) and the format's own values, ties and their neighbours.
    random_bits = rng.integers(0, 1 << 32, 1_000_000, dtype=np.uint64).astype(np.uint32)
    table = reference.finite_table(fmt)
    mids = ((table[:-1] + table[1:]) / 2).astype(np.float32)
    near = np.concatenate([mids, np.nextafter(mids, np.float32(0)), np.nextafter(mids, np.float32(np.inf)),
                           table.astype(np.float32)])
    x = np.concatenate([random_bits.view(np.float32), near, -near])
    # ml_dtypes' float8_e4m3fn turns overflow into NaN: mantissa's saturate=False.
    got = mantissa.encode(x, fmt, saturate=False if fmt == "float8_e4m3" else None)
    with np.errstate(over="ignore", invalid="ignore"):
        want = x.astype(dtype).view(uint)
    nan = np.isnan(x)
    np.testing.assert_array_equal(np.isnan(mantissa.decode(got[nan], fmt)), True)
    bad = np.flatnonzero(got[~nan] != want[~nan])
    assert bad.size == 0, f"{bad.size} differ, e.g. x={x[~nan][bad[:5]]}"
