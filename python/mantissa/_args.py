"""Argument checks shared by the Python layer: each names the argument and what it expected,
before anything is computed or written."""

import numbers

import numpy as np

_U64 = 1 << 64


def integer(name, value, low=0, high=_U64 - 1):
    """value as an int in [low, high]; a bool, float or string is a TypeError."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name}: {value!r}, expected an integer")
    v = int(value)
    if not low <= v <= high:
        raise ValueError(f"{name}: {v}, expected an integer from {low} to {high}")
    return v


def boolean(name, value):
    """value as a bool; only True, False (or numpy's) are taken."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: {value!r}, expected True or False")
    return bool(value)


def text(name, value):
    """value, a non-empty str."""
    if not isinstance(value, str):
        raise TypeError(f"{name}: {value!r}, expected a string")
    if not value:
        raise ValueError(f"{name}: an empty string")
    return value


def callback(name, value):
    """value, None or callable."""
    if value is not None and not callable(value):
        raise TypeError(f"{name}: {value!r} is not callable (expected a function or None)")
    return value
