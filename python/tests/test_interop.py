"""Arrays in and out without copies: the buffer protocol and DLPack (PyTorch CPU tensors)."""

import array

import numpy as np
import pytest

import mantissa


def test_buffer_protocol_in_place():
    values = [0.1, 1.0 / 3.0, 2.0 ** -20]
    a = array.array("f", values)
    want = mantissa.round(np.float32(values), "cbfloat16")
    mantissa.round(a, "cbfloat16", out=a)  # rounds the array.array's own memory
    np.testing.assert_array_equal(np.frombuffer(a, np.float32), want)
    np.testing.assert_array_equal(mantissa.round(memoryview(a), "cbfloat16"), want)


def test_results_export_through_dlpack_and_buffer():
    out = mantissa.round(np.float32([0.1, 0.2]), "bfloat16")
    assert np.shares_memory(np.from_dlpack(out), out)
    assert memoryview(mantissa.encode(out, "bfloat16")).format == "H"


def test_torch_cpu_tensor_without_copy():
    torch = pytest.importorskip("torch", reason="PyTorch is not installed (optional)")
    t = torch.linspace(-3, 3, 1001, dtype=torch.float32)
    want = mantissa.round(t.numpy().copy(), "bfloat16")
    np.testing.assert_array_equal(mantissa.round(t, "bfloat16"), want)
    mantissa.round(t, "bfloat16", out=t)  # in place: the tensor's own storage
    np.testing.assert_array_equal(t.numpy(), want)
    np.testing.assert_array_equal(t, t.to(torch.bfloat16).to(torch.float32))
    bits = mantissa.encode(t[::3], "float8_e5m2")  # a strided view
    np.testing.assert_array_equal(bits, mantissa.encode(t.numpy()[::3], "float8_e5m2"))
    back = torch.from_dlpack(mantissa.decode(bits, "float8_e5m2"))
    assert back.dtype == torch.float32 and back.shape == (334,)
