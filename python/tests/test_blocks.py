"""quantize_blocks against ml_dtypes (an independent element codec) and hand-derived
values: MX scales by the floor rule computed here with numpy, elements as ml_dtypes casts
x / scale; NVFP4 and fp8 blocks on hand-derived blocks; errors."""

import numpy as np
import pytest

import mantissa

ml_dtypes = pytest.importorskip("ml_dtypes")

MX = {  # element: (ml_dtypes type, emax, max)
    "float8_e4m3": (ml_dtypes.float8_e4m3fn, 8, 448.0),
    "float8_e5m2": (ml_dtypes.float8_e5m2, 15, 57344.0),
    "float6_e2m3": (ml_dtypes.float6_e2m3fn, 2, 7.5),
    "float6_e3m2": (ml_dtypes.float6_e3m2fn, 4, 28.0),
    "float4_e2m1": (ml_dtypes.float4_e2m1fn, 2, 6.0),
}


def unpack_fp4(packed, n):
    codes = np.empty(packed.size * 2, np.uint8)
    codes[0::2] = packed & 0xF
    codes[1::2] = packed >> 4
    return codes[:n]


@pytest.mark.parametrize("element", MX)
def test_mx_floor_matches_ml_dtypes(element):
    dtype, emax, top = MX[element]
    rng = np.random.default_rng(26)
    x = (rng.standard_normal((6, 64)) * np.exp2(rng.integers(-20, 20, (6, 1)))).astype(np.float32)
    q = mantissa.quantize_blocks(x, "mx", element=element, rule="floor")
    blocks = x.reshape(6, 2, 32)
    amax = np.abs(blocks).max(axis=2)
    exponent = np.clip(np.frexp(amax)[1] - 1 - emax, -127, 127)  # floor(log2 amax) - emax
    np.testing.assert_array_equal(q["scale_codes"].reshape(6, 2), exponent + 127)
    scale = np.ldexp(np.float64(1.0), exponent)[:, :, None]
    want = np.clip(blocks / scale, -top, top).astype(np.float32).astype(dtype)
    want = want.view(np.uint8).reshape(-1)
    got = q["elements"] if element != "float4_e2m1" else unpack_fp4(q["elements"], x.size)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(
        q["values"], (want.view(dtype).astype(np.float64).reshape(6, 2, 32) * scale)
        .reshape(6, 64).astype(np.float32))


def test_nvfp4_and_fp8_blocks_by_hand():
    x = np.zeros((1, 16), np.float32)
    x[0, :3] = [6.0, -1.25, 0.3]
    q = mantissa.quantize_blocks(x, "nvfp4")
    assert q["tensor_scale"] == np.float32(1 / 448)
    assert q["scale_codes"].tolist() == [0x7E]  # e4m3 448
    assert unpack_fp4(q["elements"], 3).tolist() == [0x7, 0xA, 0x1]
    # (6 * 448) * fl(1/448) rounds to 6 + 2^-21 in float32
    assert q["values"][0, :3].tolist() == [6.0 + 2.0**-21, -1.0, 0.5]
    assert q["bits_per_element"] == 4.5
    y = np.full((1, 128), 0.5, np.float32)
    q = mantissa.quantize_blocks(y, "fp8_blocks")  # scale 448 / 0.5 = 896 -> 512 (power of two)
    assert q["scales"].tolist() == [[1 / 512]]
    assert (q["values"] == 0.5).all()


def test_errors_name_the_argument():
    x = np.zeros((2, 32), np.float32)
    with pytest.raises(mantissa.Error, match="recipe: 'mxfp9'"):
        mantissa.quantize_blocks(x, "mxfp9")
    with pytest.raises(mantissa.Error, match="rule: 'round'"):
        mantissa.quantize_blocks(x, "mx", rule="round")
    with pytest.raises(mantissa.Error, match="MX element format: bfloat16"):
        mantissa.quantize_blocks(x, "mx", element="bfloat16")
    # A setting the recipe does not read is refused, not ignored.
    with pytest.raises(ValueError, match="element: recipe 'nvfp4' does not use it"):
        mantissa.quantize_blocks(x, "nvfp4", element="float8_e5m2")
    with pytest.raises(ValueError, match="rule: recipe 'fp8_blocks' does not use it"):
        mantissa.quantize_blocks(x, "fp8_blocks", rule="ceil")
    with pytest.raises(ValueError, match="hadamard: recipe 'mx' does not use it"):
        mantissa.quantize_blocks(x, "mx", hadamard=True)
    with pytest.raises(ValueError, match="2 dimensions|expected 2"):
        mantissa.quantize_blocks(np.zeros(4, np.float32))
    # The E8M0 scale format is no element format.
    with pytest.raises(mantissa.Error, match="MX element format: float8_e8m0 is not one"):
        mantissa.quantize_blocks(x, "mx", element="float8_e8m0")
    # Settings of the wrong type are refused, never coerced.
    for kwargs, words in [({"tile": (1.9, 32.7)}, r"tile\[0\]: 1.9, expected an integer"),
                          ({"tile": "12"}, "tile: '12', expected"),
                          ({"tile": (1, 2, 3)}, "tile: "),
                          ({"recipe": "fp8_blocks", "power_of_two": "false"}, "power_of_two: 'false'"),
                          ({"recipe": "nvfp4", "hadamard": "no"}, "hadamard: 'no'"),
                          ({"seed": 1.7}, "seed: 1.7"),
                          ({"seed": "5"}, "seed: '5'")]:
        with pytest.raises(TypeError, match=words):
            mantissa.quantize_blocks(x, **kwargs)
    with pytest.raises(ValueError, match=r"tile\[0\]: 18446744073709551616"):
        mantissa.quantize_blocks(x, tile=(1 << 64, 1))
    with pytest.raises(TypeError):
        mantissa.quantize_blocks(np.zeros((2, 2), np.int32))
