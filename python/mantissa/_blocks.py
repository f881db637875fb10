"""Block-scaled quantization on 2-D arrays: MX, NVFP4 and fp8 blocks (docs/python.md)."""

import numpy as np

from mantissa import _args, _core

_DEFAULT_TILES = {"mx": (1, 32), "nvfp4": (1, 16), "fp8_blocks": (1, 128)}
# The settings each recipe reads, with their defaults; any other one given is an error rather
# than silently ignored.
_RECIPE_SETTINGS = {
    "mx": {"element": "float8_e4m3", "rule": "floor"},
    "nvfp4": {"hadamard": False},
    "fp8_blocks": {"element": "float8_e4m3", "power_of_two": True},
}
_ALL_SETTINGS = {"element": "float8_e4m3", "rule": "floor", "hadamard": False,
                 "power_of_two": True}


def quantize_blocks(x, recipe="mx", element=None, rule=None, tile=None,
                    rounding="nearest_even", hadamard=None, power_of_two=None, seed=0,
                    counter=0):
    """Quantize the 2-D array x (float32, or float64 rounded to float32 first) in tiles.

    recipe: "mx" (E8M0 scales; element float8_e4m3, float8_e5m2, float6_e2m3, float6_e3m2 or
    float4_e2m1; rule floor, rceil, ceil or even), "nvfp4" (float4_e2m1 elements, e4m3 tile
    scales, a float32 tensor scale; hadamard=True rotates each row's groups of 16 first) or
    "fp8_blocks" (float32 tile scales; element float8_e4m3 or float8_e5m2; power_of_two rounds
    the scales down to powers of two; tile=x.shape is per-tensor current scaling).
    tile: (rows, cols) of one scale's tile; default 1 x 32 (mx), 1 x 16 (nvfp4), 1 x 128.
    Returns a dict: elements (uint8 codes, row-major; float4_e2m1 packed two per byte, the
    even element in the low nibble), scales (float32, one per tile, the tile grid's shape),
    scale_codes (their bit patterns), scale_format, element, tensor_scale, values (the
    dequantized float32 array) and bits_per_element. A setting the recipe does not read
    (element or rule for nvfp4, hadamard for mx, ...) is a ValueError."""
    a = np.asarray(x)
    if a.dtype.type not in (np.float32, np.float64):
        raise TypeError(f"x: dtype {a.dtype}, expected float32 or float64")
    if a.ndim != 2:
        raise ValueError(f"x: {a.ndim} dimensions, expected 2")
    # An unknown recipe is the library's error (mantissa.Error naming the recipe words).
    _args.text("recipe", recipe)
    tile = _DEFAULT_TILES.get(recipe, (1, 32)) if tile is None else _tile_arg(tile)
    for name, value in (("element", element), ("rule", rule)):
        if value is not None:
            _args.text(name, value)
    for name, value in (("hadamard", hadamard), ("power_of_two", power_of_two)):
        if value is not None:
            _args.boolean(name, value)
    _args.text("rounding", rounding)
    seed, counter = _args.integer("seed", seed), _args.integer("counter", counter)
    given = {"element": element, "rule": rule, "hadamard": hadamard,
             "power_of_two": power_of_two}
    reads = _RECIPE_SETTINGS.get(recipe, _ALL_SETTINGS)
    for name, value in given.items():
        if value is not None and name not in reads:
            raise ValueError(f"{name}: recipe {recipe!r} does not use it (it reads: "
                             f"{', '.join(reads)})")
    s = {k: (given[k] if given[k] is not None else v) for k, v in _ALL_SETTINGS.items()}
    a = np.ascontiguousarray(a, dtype=np.float32)
    return _core.quantize_blocks(a, recipe, s["element"], s["rule"], tile, rounding,
                                 bool(s["hadamard"]), bool(s["power_of_two"]), seed, counter)


def _tile_arg(tile):
    """tile as (rows, cols) of two integers from 1 to 2^63 - 1."""
    try:
        parts = tuple(tile)
    except TypeError:
        parts = None
    if isinstance(tile, (str, bytes)) or parts is None or len(parts) != 2:
        raise TypeError(f"tile: {tile!r}, expected (rows, cols): two integers")
    return tuple(_args.integer(f"tile[{i}]", t, 1, (1 << 63) - 1) for i, t in enumerate(parts))
