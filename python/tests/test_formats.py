"""The codecs from Python against the exact reference (reference.py), every format and the
deterministic rounding modes, on sampled inputs; arguments, shapes, strides and errors."""

import numpy as np
import pytest

import mantissa
import reference
from reference import FORMATS

RNG_SEED = 20261124


def samples(fmt, n=100_000):
    """Finite float32 inputs that exercise a format: every finite value, every midpoint of
    two neighbours (the ties) and its float32 neighbours, log-uniform magnitudes from below
    the smallest subnormal to past max, and values around max."""
    rng = np.random.default_rng(RNG_SEED)
    table = reference.finite_table(fmt)
    mids = (table[:-1] + table[1:]) / 2
    mids32 = mids.astype(np.float32)
    around_mids = np.concatenate([mids32, np.nextafter(mids32, np.float32(0)),
                                  np.nextafter(mids32, np.float32(np.inf))])
    top = table[-1]
    log_lo, log_hi = np.log2(table[1] / 4), min(np.log2(top * 4), 127.0)
    random = np.exp2(rng.uniform(log_lo, log_hi, n))
    near_max = top + (top - table[-2]) * rng.uniform(-1, 2, 1000)
    values = np.concatenate([table, around_mids, random, near_max])
    values = values[values <= np.finfo(np.float32).max].astype(np.float32)
    signs = np.where(rng.integers(0, 2, values.size) == 1, -1, 1).astype(np.float32)
    return values * signs


def assert_patterns(got, want, fmt):
    want_nan = np.isnan(reference.decode(want, fmt))
    got_nan = np.isnan(reference.decode(got, fmt))
    np.testing.assert_array_equal(got_nan, want_nan)
    bad = np.flatnonzero((got != want) & ~want_nan)
    assert bad.size == 0, f"{fmt}: {bad.size} patterns differ, e.g. {got[bad[:5]]} != {want[bad[:5]]}"


def test_formats_table():
    table = {row["name"]: row for row in mantissa.formats()}
    tensor_formats = [name for name, row in table.items() if row["use"] == "tensor"]
    assert tensor_formats == ["float32"] + FORMATS
    assert [name for name, row in table.items() if row["use"] != "tensor"] == [
        "float6_e2m3", "float6_e3m2", "float4_e2m1", "float8_e8m0"]
    for fmt in FORMATS:
        e, m, bias, has_inf = reference.LAYOUTS[fmt]
        row = table[fmt]
        assert (row["exponent_bits"], row["mantissa_bits"], row["bias"]) == (e, m, bias)
        assert row["has_infinity"] == has_inf
        values = reference.finite_table(fmt)
        assert row["max"] == values[-1]
        assert row["min_subnormal"] == values[1]
        assert row["min_normal"] == 2.0 ** (1 - bias)
        assert row["epsilon"] == 2.0 ** -m
        assert row["storage_bytes"] == (1 if 1 + e + m <= 8 else 2)
    assert table["float8_e4m3"]["saturates_by_default"]
    assert table["cbfloat16"]["safetensors_dtype"] is None


@pytest.mark.parametrize("fmt", FORMATS)
def test_decode_every_pattern(fmt):
    patterns = np.arange(1 << reference.bits(fmt), dtype=np.int64)
    got = mantissa.decode(patterns.astype(np.uint8 if reference.bits(fmt) == 8 else np.uint16), fmt)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, reference.decode(patterns, fmt).astype(np.float32))
    np.testing.assert_array_equal(np.signbit(got), patterns >> (reference.bits(fmt) - 1) == 1)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("rounding", ["nearest_even", "toward_zero"])
@pytest.mark.parametrize("saturate", [False, True])
def test_encode_against_exact_reference(fmt, rounding, saturate):
    x = samples(fmt)
    got = mantissa.encode(x, fmt, rounding=rounding, saturate=saturate)
    assert got.dtype == (np.uint8 if reference.bits(fmt) == 8 else np.uint16)
    assert_patterns(got.astype(np.int64), reference.encode(x, fmt, rounding, saturate), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_round_is_encode_then_decode(fmt):
    x = samples(fmt, 10_000)
    for rounding in ["nearest_even", "toward_zero", "stochastic"]:
        want = mantissa.decode(mantissa.encode(x, fmt, rounding=rounding, seed=7), fmt)
        got = mantissa.round(x, fmt, rounding=rounding, seed=7)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("fmt", FORMATS)
def test_specials(fmt):
    has_inf = reference.LAYOUTS[fmt][3]
    x = np.float32([np.inf, -np.inf, np.nan, 0.0, -0.0])
    got = mantissa.round(x, fmt)
    if has_inf:
        np.testing.assert_array_equal(got[:2], x[:2])
    else:  # float8_e4m3: +-max when saturating (its default), NaN otherwise
        np.testing.assert_array_equal(got[:2], [448, -448])
        assert np.isnan(mantissa.round(x[:2], fmt, saturate=False)).all()
    assert np.isnan(got[2])
    np.testing.assert_array_equal(np.signbit(got[3:]), [False, True])


def test_float64_input_rounds_to_float32_first():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(1000) * 1e3
    for fmt in FORMATS:
        np.testing.assert_array_equal(mantissa.encode(x, fmt), mantissa.encode(x.astype(np.float32), fmt))


def test_any_shape_and_stride():
    rng = np.random.default_rng(2)
    base = rng.standard_normal((6, 8, 10)).astype(np.float32)
    views = [base, base[:, ::2, 1::3], base.transpose(2, 0, 1), base[3, 4, 5], base[:0]]
    for v in views:
        for fmt in FORMATS:
            got = mantissa.round(v, fmt)
            assert got.shape == np.shape(v)
            np.testing.assert_array_equal(got, mantissa.round(np.array(v).reshape(-1), fmt).reshape(np.shape(v)))
            bits = mantissa.encode(v, fmt)
            assert bits.shape == np.shape(v)
            np.testing.assert_array_equal(mantissa.decode(bits, fmt), got)
            if bits.ndim == 3:
                np.testing.assert_array_equal(mantissa.decode(bits[::-1], fmt), got[::-1])


def test_large_results_are_ordinary_arrays():
    """Results of 4 MiB or more live in the library's page memory: C-contiguous, writable,
    of the right shape, with the right values (bfloat16 is float32's upper half, and the
    16-bit and 8-bit results are checked against the exact reference), alive as long as any
    view of them."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 1_000_001)).astype(np.float32)  # 12 MB of float32
    bits = mantissa.encode(x, "bfloat16", rounding="toward_zero")
    np.testing.assert_array_equal(bits, (x.view(np.uint32) >> 16).astype(np.uint16))
    y = mantissa.decode(bits, "bfloat16")
    view = y[1, ::1000]
    for a in (bits, y):
        assert a.flags.c_contiguous and a.flags.writeable and a.shape == x.shape
    np.testing.assert_array_equal(y.view(np.uint32), bits.astype(np.uint32) << 16)
    want = y[1, ::1000].copy()
    del y
    np.testing.assert_array_equal(view, want)
    r = mantissa.round(x, "float8_e4m3")
    assert r.flags.c_contiguous and r.shape == x.shape
    np.testing.assert_array_equal(r[0, :5000], reference.decode(reference.encode(x[0, :5000], "float8_e4m3", "nearest_even", None), "float8_e4m3"))
    r[...] = 0  # writable
    assert not r.any()


def test_freed_large_results_are_reused_with_new_values():
    """A freed result's pages are kept (within 256 MiB) and the next result of its size takes
    them: its values are the new conversion's, not the old ones."""
    mantissa.release_kept_pages()
    assert mantissa.kept_page_bytes() == 0
    n = 3 << 20  # 12 MiB of float32
    first = mantissa.decode(np.full(n, 0x3F80, np.uint16), "bfloat16")  # 1.0
    address = first.__array_interface__["data"][0]
    del first
    assert mantissa.kept_page_bytes() >= n * 4
    bits = np.arange(n, dtype=np.uint32).astype(np.uint16) & 0x7F7F
    second = mantissa.decode(bits, "bfloat16")
    assert second.__array_interface__["data"][0] == address
    np.testing.assert_array_equal(second.view(np.uint32), bits.astype(np.uint32) << 16)
    mantissa.release_kept_pages()
    assert mantissa.kept_page_bytes() == 0
    np.testing.assert_array_equal(second[:4].view(np.uint32), bits[:4].astype(np.uint32) << 16)


def test_out_arguments_write_in_place():
    x = np.float32([0.1, 1.0 / 3.0, 1e-3])
    want = mantissa.round(x, "bfloat16")
    y = x.copy()
    assert mantissa.round(y, "bfloat16", out=y) is y
    np.testing.assert_array_equal(y, want)
    bits = np.zeros(3, np.uint16)
    assert mantissa.encode(x, "bfloat16", out=bits) is bits
    decoded = np.empty(3, np.float32)
    mantissa.decode(bits, "bfloat16", out=decoded)
    np.testing.assert_array_equal(decoded, want)
    with pytest.raises(ValueError, match="out:"):
        mantissa.encode(x, "bfloat16", out=np.zeros(3, np.uint8))
    with pytest.raises(ValueError, match="C-contiguous"):
        mantissa.round(x, "float16", out=np.zeros(6, np.float32)[::2])


def test_saturate_default_per_format():
    big = np.float32([1e6, -1e6])
    np.testing.assert_array_equal(mantissa.round(big, "float8_e4m3"), [448, -448])
    np.testing.assert_array_equal(mantissa.round(big, "float16"), [np.inf, -np.inf])
    np.testing.assert_array_equal(mantissa.round(big, "float16", saturate=True), [65504, -65504])
    assert np.isnan(mantissa.round(big, "float8_e4m3", saturate=False)).all()


def test_errors_carry_mantissa_messages():
    x = np.float32([1.0])
    with pytest.raises(mantissa.Error, match=r"format: unknown format 'float7' \(expected one of: .*cbfloat16"):
        mantissa.round(x, "float7")
    with pytest.raises(ValueError, match=r"rounding: 'up' \(expected one of: nearest_even, toward_zero, stochastic\)"):
        mantissa.encode(x, "bfloat16", rounding="up")
    with pytest.raises(TypeError, match="float32 or float64"):
        mantissa.round(np.int32([1]), "bfloat16")
    with pytest.raises(TypeError, match="uint16"):
        mantissa.decode(np.uint8([1]), "bfloat16")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("saturate", [False, True])
def test_stochastic_encode_against_the_specified_rule(fmt, saturate):
    x = samples(fmt)
    # A counter whose low half wraps inside the array: the key changes with the high half.
    for seed, counter in [(1234, 0), (2**40 + 5, 2**32 - 1000)]:
        got = mantissa.encode(x, fmt, rounding="stochastic", seed=seed, counter=counter,
                              saturate=saturate)
        want = reference.encode_stochastic(x, fmt, seed, counter, saturate)
        assert_patterns(got.astype(np.int64), want, fmt)


def test_big_endian_bits_decode_to_their_values():
    bits = np.array([0x3F80, 0x4000, 0xC040], ">u2")
    np.testing.assert_array_equal(mantissa.decode(bits, "bfloat16"), [1.0, 2.0, -3.0])


@pytest.mark.parametrize("n", [4, 1 << 21])
def test_an_out_that_overlaps_the_input_gets_the_whole_result(n):
    # Encoding into the first half of x's own bytes, decoding into the bytes being read:
    # the result must be what a separate out gets (numpy's rule for overlapping operands),
    # also when the conversion runs in chunks on several threads.
    rng = np.random.default_rng(RNG_SEED)
    x = rng.standard_normal(n).astype(np.float32)
    want = mantissa.encode(x, "bfloat16")
    for view in (lambda a: a.view(np.uint16)[:n], lambda a: a.view(np.uint16)[n:]):
        y = x.copy()
        out = view(y)
        mantissa.encode(y, "bfloat16", out=out)
        np.testing.assert_array_equal(out, want)
    buf = np.zeros(n, np.float32)
    head = buf.view(np.uint16)[:n]
    head[:] = want
    mantissa.decode(head, "bfloat16", out=buf)
    np.testing.assert_array_equal(buf, mantissa.decode(want, "bfloat16"))


def test_codes_wider_than_the_format_are_refused():
    with pytest.raises(ValueError, match=r"bits: 0x41 at flat index 1 does not fit float6_e2m3 \(6 bits, at most 0x3f\)"):
        mantissa.decode(np.uint8([0x01, 0x41]), "float6_e2m3")
    with pytest.raises(ValueError, match=r"0xf1 at flat index 0 does not fit float4_e2m1"):
        mantissa.decode(np.uint8([0xF1]), "float4_e2m1")
    np.testing.assert_array_equal(mantissa.decode(np.uint8([0x3F, 0x0F]), "float6_e2m3"),
                                  [-7.5, 1.875])


def test_bad_arguments_are_refused_before_out_is_written():
    x = np.float32([1.1, 2.2])
    for kwargs, error, words in [
            ({"fmt": "nope"}, mantissa.Error, "format: unknown format 'nope'"),
            ({"fmt": None}, TypeError, "fmt: None, expected a string"),
            ({"fmt": "bfloat16", "rounding": "up"}, mantissa.Error, "rounding: 'up'"),
            ({"fmt": "bfloat16", "seed": -1}, ValueError, "seed: -1, expected an integer from 0"),
            ({"fmt": "bfloat16", "seed": 1.5}, TypeError, "seed: 1.5, expected an integer"),
            ({"fmt": "bfloat16", "counter": True}, TypeError, "counter: True"),
            ({"fmt": "bfloat16", "counter": 1 << 64}, ValueError, "counter: 18446744073709551616")]:
        out = np.zeros(2, np.float32)
        with pytest.raises(error, match=words):
            mantissa.round(x, out=out, **kwargs)
        assert (out == 0).all(), kwargs
        bits = np.zeros(2, np.uint16)
        with pytest.raises(error, match=words):
            mantissa.encode(x, out=bits, **kwargs)
        assert (bits == 0).all(), kwargs
