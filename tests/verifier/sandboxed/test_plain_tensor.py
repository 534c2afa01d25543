"""What a candidate's tensor must be before the worker hands its bytes to the parent (verifier/sandboxed/
plain_tensor.py), and the worker's use of it (rt3_neg_bit_output: a flagged output made PyTorch's copy compute)."""
from __future__ import annotations

import os

import pytest
import torch

from evokernel.verifier.message_codec import TensorMeta
from evokernel.verifier.sandboxed.plain_tensor import NotPlain, check_plain, copy_bytes
from evokernel.verifier.sandboxed.worker import Worker, _Fail


@pytest.mark.parametrize("make", [
    lambda: torch.randn(4, 5), lambda: torch.randn(4, 5).t(), lambda: torch.zeros(3, dtype=torch.float16),
    lambda: torch.arange(6, dtype=torch.int64), lambda: torch.frombuffer(bytearray(16), dtype=torch.float32),
    lambda: torch.empty(0), lambda: torch.ones(2, 3)[:, 1],
])
def test_plain_tensors_pass(make):
    check_plain(make())


def test_a_tensor_made_in_inference_mode_is_plain():
    with torch.inference_mode():
        t = torch.ones(3)
    check_plain(t)


@pytest.mark.parametrize("make, says", [
    (lambda: torch.randn(4)._neg_view(), "negative bit"),
    (lambda: torch.randn(4, dtype=torch.complex64).conj(), "conjugate bit"),
    (lambda: torch._efficientzerotensor(4), "zero-tensor flag"),
    (lambda: torch._to_functional_tensor(torch.randn(4)), "dispatch keys"),  # type torch.Tensor, Functionalize key
    (lambda: torch.randn(4).to_sparse(), "layout"),
    (lambda: torch.nn.Parameter(torch.randn(4)), "not a plain torch.Tensor"),
    (lambda: torch.empty(4, device="meta"), "meta"),
])
def test_flagged_or_unusual_tensors_are_refused(make, says):
    with pytest.raises(NotPlain, match=says):
        check_plain(make())


def test_copy_bytes_takes_contiguous_bytes_raw_and_strided_ones_by_copy():
    src = torch.randn(6, 7)
    dst = torch.empty(42)
    copy_bytes(dst, src)
    assert torch.equal(dst.view(6, 7), src)
    copy_bytes(dst, src.t())
    assert torch.equal(dst.view(7, 6), src.t())


def test_copy_bytes_refuses_sizes_past_the_storage():
    src = torch.ones(64)
    src.untyped_storage().resize_(8)  # the tensor now claims 256 bytes of an 8-byte storage
    with pytest.raises(NotPlain, match="past its storage"):
        copy_bytes(torch.empty(64), src)


def _worker(role: str, capacity: int = 1 << 16) -> Worker:
    fd = os.memfd_create("evk-test-region")
    os.ftruncate(fd, capacity)
    w = Worker(role, channel=None, data_fd=fd)
    w._remap(capacity)
    return w


def test_worker_refuses_a_negated_output_of_the_candidate():
    w = _worker("candidate")
    relu = torch.relu(torch.randn(16))
    with pytest.raises(_Fail) as info:
        w._write([relu._neg_view()], 0)
    assert info.value.phase == "hack" and "negative bit" in info.value.message
    meta = TensorMeta.from_json(w._write([relu], 0)[0], w.capacity)  # the plain tensor's bytes, raw
    assert torch.equal(w._view(meta), relu)


def test_worker_materialises_the_reference_views_flags():
    w = _worker("reference")
    x = torch.randn(16)
    meta = TensorMeta.from_json(w._write([x._neg_view()], 0)[0], w.capacity)
    assert torch.equal(w._view(meta), -x)
