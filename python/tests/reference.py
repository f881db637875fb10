"""An exact reference for the formats, written from their layouts alone (not from mantissa):
every finite non-negative value of a format in pattern order, and encoding by search in that
table, in float64 arithmetic (exact for these values and for float32 inputs)."""

import numpy as np

# name: (exponent bits, mantissa bits, bias, has infinity)
LAYOUTS = {
    "float16": (5, 10, 15, True),
    "bfloat16": (8, 7, 127, True),
    "cbfloat16": (6, 9, 31, True),
    "float8_e4m3": (4, 3, 7, False),
    "float8_e5m2": (5, 2, 15, True),
}
FORMATS = list(LAYOUTS)


def bits(fmt):
    e, m, _, _ = LAYOUTS[fmt]
    return 1 + e + m


def decode(patterns, fmt):
    """Value of each pattern (float64; NaN for NaN patterns)."""
    e_bits, m_bits, bias, has_inf = LAYOUTS[fmt]
    p = np.asarray(patterns, dtype=np.int64)
    sign = np.where(p >> (e_bits + m_bits) & 1, -1.0, 1.0)
    e = (p >> m_bits) & ((1 << e_bits) - 1)
    m = p & ((1 << m_bits) - 1)
    frac = m / float(1 << m_bits)
    value = np.where(e == 0, np.ldexp(frac, 1 - bias), np.ldexp(1.0 + frac, e - bias))
    top = e == (1 << e_bits) - 1
    if has_inf:
        value = np.where(top & (m == 0), np.inf, value)
        value = np.where(top & (m != 0), np.nan, value)
    else:
        value = np.where(top & (m == (1 << m_bits) - 1), np.nan, value)
    return sign * value


def finite_table(fmt):
    """The finite non-negative values, index = magnitude pattern (0 .. max finite)."""
    e_bits, m_bits, _, _ = LAYOUTS[fmt]
    v = decode(np.arange(1 << (e_bits + m_bits)), fmt)
    return v[np.isfinite(v)]


def encode(x, fmt, rounding, saturate):
    """Patterns of finite float32 values x: nearest_even or toward_zero, overflow to +-max
    (saturate) or to infinity (NaN in a format without infinity)."""
    e_bits, m_bits, _, has_inf = LAYOUTS[fmt]
    table = finite_table(fmt)
    top = len(table) - 1
    sign_bit = 1 << (e_bits + m_bits)
    a = np.abs(np.asarray(x, dtype=np.float64))
    lo = np.searchsorted(table, a, side="right") - 1  # table[lo] <= a
    if rounding == "toward_zero":
        mag = np.minimum(lo, top)
    else:
        # The value past max, as if the exponent went on: max + one ulp of max.
        ext = np.append(table, table[top] + (table[top] - table[top - 1]))
        hi = np.minimum(lo + 1, top + 1)
        d_lo = a - ext[lo]
        d_hi = ext[hi] - a
        up = (d_hi < d_lo) | ((d_hi == d_lo) & (lo % 2 == 1))
        mag = np.where(a == ext[lo], lo, np.where(up, hi, lo))
        overflow = mag > top
        overflow_pattern = top if saturate else (
            (((1 << e_bits) - 1) << m_bits) if has_inf else sign_bit - 1)
        mag = np.where(overflow, overflow_pattern, mag)
    return np.where(np.signbit(x), sign_bit, 0) | mag


# Stochastic rounding as docs/numerics.md specifies it: with p = (|x| - lo) / (hi - lo) and
# f = floor(p * 2^32), the magnitude rounds up when f + r >= 2^32, r = stochastic_bits(seed,
# counter + i): the mixer and key schedule of mantissa/numerics/rounding.hpp, in numpy uint32
# arithmetic (which wraps as C++'s does).
def _mix32(x):
    x = np.asarray(x, dtype=np.uint32).copy()
    x ^= x >> np.uint32(16)
    x *= np.uint32(0x7FEB352D)
    x ^= x >> np.uint32(15)
    x *= np.uint32(0x846CA68B)
    x ^= x >> np.uint32(16)
    return x


def stochastic_bits(seed, counters):
    """The 32 random bits of (seed, counter) for an array of counters (uint64)."""
    counters = np.asarray(counters, dtype=np.uint64)
    high = (counters >> np.uint64(32)).astype(np.uint32)
    low = (counters & np.uint64(0xFFFFFFFF)).astype(np.uint32)
    a = _mix32(np.uint32(seed & 0xFFFFFFFF) ^ np.uint32(0x243F6A88))
    b = _mix32(np.uint32(seed >> 32) ^ a ^ np.uint32(0x85A308D3))
    key = _mix32(b ^ (high * np.uint32(0x9E3779B9)) ^ np.uint32(0x13198A2E))
    return _mix32(_mix32(low ^ key) + key)


def encode_stochastic(x, fmt, seed, counter, saturate):
    """Patterns of finite float32 values x under stochastic rounding, element i with the
    random bits of (seed, counter + i); overflow as encode()."""
    e_bits, m_bits, _, has_inf = LAYOUTS[fmt]
    table = finite_table(fmt)
    top = len(table) - 1
    sign_bit = 1 << (e_bits + m_bits)
    ext = np.append(table, table[top] + (table[top] - table[top - 1]))
    a = np.abs(np.asarray(x, dtype=np.float64))
    lo = np.minimum(np.searchsorted(table, a, side="right") - 1, top)
    beyond = a >= ext[top + 1]  # past max by a whole ulp of max: overflows whatever r is
    lo_safe = np.where(beyond, top, lo)
    p = (a - ext[lo_safe]) / (ext[lo_safe + 1] - ext[lo_safe])
    f = np.floor(np.where(beyond, 0.0, p) * 2.0**32).astype(np.uint64)
    r = stochastic_bits(seed, np.uint64(counter) + np.arange(a.size, dtype=np.uint64))
    up = f + r.astype(np.uint64) >= np.uint64(1 << 32)
    mag = lo_safe + up
    overflow = beyond | (mag > top)
    overflow_pattern = top if saturate else (
        (((1 << e_bits) - 1) << m_bits) if has_inf else sign_bit - 1)
    mag = np.where(overflow, overflow_pattern, mag)
    return np.where(np.signbit(x), sign_bit, 0) | mag
