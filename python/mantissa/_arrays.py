"""encode, decode and round on arrays: numpy arrays, anything with the buffer protocol, and
DLPack producers such as PyTorch CPU tensors (taken without a copy)."""

import numpy as np

from mantissa import _args, _core

_FLOAT_INPUTS = (np.float32, np.float64)
_BITS_DTYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_CODE_BITS = {row["name"]: row["bits"] for row in _core.formats()}


def formats():
    """The format table `mantissa formats` prints, as a list of dicts (one per format)."""
    return _core.formats()


def _as_array(x):
    """x as a numpy array without copying: ndarray, DLPack producer (torch), buffer, list."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    return np.asarray(x)


def _float32_input(x):
    """x as a C-contiguous float32 array; a copy only when x is float64 or not contiguous."""
    a = _as_array(x)
    if a.dtype.type not in _FLOAT_INPUTS:
        raise TypeError(f"x: dtype {a.dtype}, expected float32 or float64")
    return np.asarray(a, dtype=np.float32, order="C")


def _check_out(out, shape, dtype):
    """`out` as a writable C-contiguous numpy view of the given shape and dtype."""
    o = _as_array(out)
    if o.dtype != dtype or o.shape != shape:
        raise ValueError(f"out: {o.dtype} of shape {o.shape}, expected {np.dtype(dtype)} of "
                         f"shape {shape}")
    if not (o.flags.c_contiguous and o.flags.writeable):
        raise ValueError("out: must be writable and C-contiguous")
    return o


def _saturate_arg(saturate):
    if saturate is not None and not isinstance(saturate, (bool, np.bool_)):
        raise TypeError("saturate: expected None, True or False")
    return None if saturate is None else bool(saturate)


def _format_arg(fmt):
    """fmt, checked: a mantissa.Error naming the format words when it is none of them."""
    _core.storage_bytes(_args.text("fmt", fmt))
    return fmt


def _options(rounding, seed, counter, saturate):
    """The conversion options, each checked before anything is computed or written."""
    _core.check_rounding(_args.text("rounding", rounding))
    return (rounding, _args.integer("seed", seed), _args.integer("counter", counter),
            _saturate_arg(saturate))


def _check_codes(b, fmt):
    """Codes of a format narrower than its storage (fp6, fp4) must fit its bits."""
    bits = _CODE_BITS[fmt]
    if bits >= 8 * b.dtype.itemsize:
        return
    top = (1 << bits) - 1
    flat = b.reshape(-1)
    bad = np.flatnonzero(flat > top)
    if bad.size:
        raise ValueError(f"bits: {int(flat[bad[0]]):#x} at flat index {bad[0]} does not fit "
                         f"{fmt} ({bits} bits, at most {top:#x})")


def _into(o, a, dtype, convert):
    """convert(target) writes the result; into o, or through a new array when o shares
    memory with the input a (the conversion runs in chunks on several threads: an
    overlapping out would read values it already overwrote)."""
    if not np.may_share_memory(a, o):
        convert(o)
        return
    t = _core.empty(o.shape, dtype)
    convert(t)
    np.copyto(o, t)


def encode(x, fmt, rounding="nearest_even", seed=0, counter=0, saturate=None, out=None):
    """x (float32 or float64; float64 is rounded to float32 first) in format `fmt`: bit
    patterns, uint8 for the fp8 formats, uint16 for the 16-bit ones, uint32 for float32.
    rounding: nearest_even, toward_zero or stochastic (element i uses the random bits of
    (seed, counter + i)). saturate: None for the format's default (float8_e4m3 saturates,
    the others overflow to infinity), True to clamp to +-max, False for inf (NaN in e4m3)."""
    dtype = _BITS_DTYPES[_core.storage_bytes(_format_arg(fmt))]
    opts = _options(rounding, seed, counter, saturate)
    a = _float32_input(x)
    o = _core.empty(a.shape, dtype) if out is None else _check_out(out, a.shape, dtype)
    _into(o, a, dtype, lambda t: _core.encode_into(a, t, fmt, *opts))
    return o if out is None else out


def decode(bits, fmt, out=None):
    """Bit patterns of format `fmt` (unsigned or signed integers of its width, either byte
    order) as float32, exactly. A code with bits above the format's width (fp6 and fp4 in a
    byte) is a ValueError naming it."""
    b = _as_array(bits)
    width = _core.storage_bytes(_format_arg(fmt))
    if b.dtype.kind not in "ui" or b.dtype.itemsize != width:
        raise TypeError(f"bits: dtype {b.dtype}, expected {np.dtype(_BITS_DTYPES[width])} "
                        f"for {fmt}")
    shape = b.shape
    if not b.dtype.isnative:
        b = b.astype(b.dtype.newbyteorder("="))
    b = np.ascontiguousarray(b).view(_BITS_DTYPES[width])
    _check_codes(b, fmt)
    o = _core.empty(shape, np.float32) if out is None else _check_out(out, shape, np.float32)
    _into(o, b, np.float32, lambda t: _core.decode_into(b, t, fmt))
    return o if out is None else out


def round(x, fmt, rounding="nearest_even", seed=0, counter=0, saturate=None, out=None):
    """decode(encode(x, fmt, ...), fmt): the float32 values x takes in `fmt`. With out=x (a
    float32 C-contiguous array or tensor) x is rounded in place."""
    _format_arg(fmt)
    opts = _options(rounding, seed, counter, saturate)
    a = _as_array(x)
    if a.dtype.type not in _FLOAT_INPUTS:
        raise TypeError(f"x: dtype {a.dtype}, expected float32 or float64")
    if out is None:
        o = _core.empty(a.shape, np.float32)
        np.copyto(o, a, casting="same_kind")
    else:
        o = _check_out(out, a.shape, np.float32)
        same = (a.dtype == np.float32 and a.strides == o.strides
                and a.__array_interface__["data"] == o.__array_interface__["data"])
        if not same:
            np.copyto(o, a, casting="same_kind")
    _core.round_inplace(o, fmt, *opts)
    return o if out is None else out
