"""Stochastic rounding: each value lands on one of its two neighbours, and the mean of many
independent roundings is the exact value (a statistical test with a fixed seed)."""

import numpy as np
import pytest

import mantissa
import reference
from reference import FORMATS

N = 1 << 14  # roundings per value
SIGMAS = 5   # the bound: |mean - x| <= 5 standard errors of the mean


@pytest.mark.parametrize("fmt", FORMATS)
def test_mean_is_the_exact_value(fmt):
    rng = np.random.default_rng(11)
    table = reference.finite_table(fmt)
    # Values strictly between neighbours, normal and subnormal, both signs.
    i = rng.integers(1, len(table) - 1, 40)
    lo, hi = table[i], table[i + 1]
    x = (lo + (hi - lo) * rng.uniform(0.05, 0.95, i.size)).astype(np.float32)
    x[::2] *= -1
    for k, v in enumerate(x):
        r = mantissa.round(np.full(N, v), fmt, rounding="stochastic", seed=1234, counter=k * N)
        a, b = np.float32(np.sign(v) * lo[k]), np.float32(np.sign(v) * hi[k])
        assert np.isin(r, [a, b]).all(), f"{fmt}: {v} rounded off its neighbours"
        # Each rounding is a or b: variance <= (b - a)^2 / 4, so the mean's standard error is
        # at most |b - a| / (2 sqrt(N)).
        bound = SIGMAS * abs(float(b) - float(a)) / (2 * np.sqrt(N))
        assert abs(r.astype(np.float64).mean() - float(v)) <= bound, f"{fmt}: {v}"


def test_seed_and_counter_reproduce():
    x = np.full(1000, 0.1, np.float32)
    a = mantissa.encode(x, "bfloat16", rounding="stochastic", seed=3)
    np.testing.assert_array_equal(a, mantissa.encode(x, "bfloat16", rounding="stochastic", seed=3))
    assert (a != mantissa.encode(x, "bfloat16", rounding="stochastic", seed=4)).any()
    # Element i uses the random bits of (seed, counter + i).
    np.testing.assert_array_equal(
        a[100:], mantissa.encode(x[100:], "bfloat16", rounding="stochastic", seed=3, counter=100))


def test_large_arrays_give_the_bits_of_small_calls():
    # Arrays of more than two chunks (2^18 elements each) are converted on several threads:
    # every element must get the bits it gets in a call of its own (stochastic counters
    # included), at chunk boundaries as well as inside.
    n = (1 << 20) + 12345
    x = (np.random.default_rng(5).standard_normal(n) * 3).astype(np.float32)
    for rounding in ("nearest_even", "stochastic"):
        whole = mantissa.encode(x, "cbfloat16", rounding=rounding, seed=9, counter=7)
        rounded = mantissa.round(x, "float8_e5m2", rounding=rounding, seed=9, counter=7)
        for start in (0, (1 << 18) - 3, 1 << 19, n - 50):
            piece = slice(start, start + 50)
            np.testing.assert_array_equal(
                whole[piece], mantissa.encode(x[piece], "cbfloat16", rounding=rounding, seed=9,
                                              counter=7 + start))
            np.testing.assert_array_equal(
                rounded[piece], mantissa.round(x[piece], "float8_e5m2", rounding=rounding,
                                               seed=9, counter=7 + start))
    np.testing.assert_array_equal(mantissa.decode(whole, "cbfloat16")[-70000:],
                                  mantissa.decode(whole[-70000:], "cbfloat16"))
