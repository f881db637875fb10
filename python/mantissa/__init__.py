"""mantissa from Python: exact number formats on numpy arrays, and training runs.

The codecs and the trainer are mantissa's C++ library (the extension module mantissa._core);
this package checks arguments and moves arrays. docs/python.md describes every function.
"""

from mantissa._core import Error, kept_page_bytes, release_kept_pages
from mantissa._arrays import decode, encode, formats, round
from mantissa._blocks import quantize_blocks
from mantissa._runs import read_run, report, train

Error.__module__ = "mantissa"  # shown as mantissa.Error, not mantissa._core.Error

__all__ = [
    "Error",
    "formats",
    "encode",
    "decode",
    "round",
    "quantize_blocks",
    "train",
    "read_run",
    "report",
    "kept_page_bytes",
    "release_kept_pages",
]
