"""Runs INSIDE the sandbox: what a tensor the worker hands to the parent must be, and how its bytes are taken.

A tensor's *meaning* is not only its bytes: TensorImpl carries flags (the negative and conjugate bits, the
zero-tensor key, a Python or functionalization key ...) that make PyTorch compute something whenever the tensor
is read. Native code reaches those flags through inline header methods (``_set_neg(true)``: no symbol for the
binary judge to see), and the worker's own copy of an output into the shared region is PyTorch code that runs
outside the operator recorder: a flagged output would have PyTorch compute the task's last operator, unwatched.

So the rule is positive: a candidate's tensor is accepted only when it is exactly what a plain CPU tensor is --
``type`` torch.Tensor, strided layout, on the CPU, no neg/conj bit, not a zero tensor, and its dispatch keys
exactly the keys a freshly allocated CPU tensor of its dtype carries (with or without the autograd keys, as
tensors made in inference mode have). Anything else is refused with a message that names what was found. Its
bytes are then taken raw (memmove from its storage) when it is contiguous, so no PyTorch kernel runs on it.
"""
from __future__ import annotations

import ctypes

import torch


class NotPlain(Exception):
    """The tensor is not a plain strided dense CPU tensor (the message says what it is instead)."""


def _key_set(t: torch.Tensor) -> int:
    return torch._C._dispatch_keys(t).raw_repr()


_PLAIN_KEYS: dict[torch.dtype, frozenset[int]] = {}


def plain_keys(dtype: torch.dtype) -> frozenset[int]:
    """The dispatch key sets a plain CPU tensor of ``dtype`` carries: one allocated normally, one in inference mode."""
    keys = _PLAIN_KEYS.get(dtype)
    if keys is None:
        normal = torch.empty(0, dtype=dtype)
        with torch.inference_mode():
            inference = torch.empty(0, dtype=dtype)
        keys = _PLAIN_KEYS[dtype] = frozenset({_key_set(normal), _key_set(inference)})
    return keys


def value_flags(t: torch.Tensor) -> list[str]:
    """The flags of ``t`` that make PyTorch compute whenever it reads it (none on a plain tensor)."""
    return [name for name, on in (("negative bit", t.is_neg()), ("conjugate bit", t.is_conj()),
                                  ("zero-tensor flag", t._is_zerotensor())) if on]


def check_plain(t: torch.Tensor, what: str = "output") -> None:
    """Raise `NotPlain` unless ``t`` is a plain strided dense CPU tensor (see the module's docstring)."""
    if type(t) is not torch.Tensor:  # noqa: E721 - subclasses and look-alikes are refused
        raise NotPlain(f"the {what} is a {type(t).__module__}.{type(t).__qualname__}, not a plain torch.Tensor")
    if t.layout != torch.strided:
        raise NotPlain(f"the {what} has layout {t.layout}; only dense strided tensors are accepted")
    if t.device.type != "cpu":
        raise NotPlain(f"the {what} is on {t.device}, not the CPU")
    flags = value_flags(t)
    if flags:
        raise NotPlain(f"the {what} carries the {' and the '.join(flags)}: reading it would have PyTorch compute "
                       "(negate, conjugate or zero) its values outside the kernel; write the final values into a "
                       "plain tensor")
    keys = torch._C._dispatch_keys(t)
    if keys.raw_repr() not in plain_keys(t.dtype):
        expected = torch._C.DispatchKeySet.from_raw_repr(min(plain_keys(t.dtype)))
        raise NotPlain(f"the {what} carries dispatch keys {keys}, not those of a plain CPU tensor ({expected}): "
                       "its flags would make PyTorch compute when it is read; return a plain tensor")


def copy_bytes(dst: torch.Tensor, src: torch.Tensor) -> None:
    """``dst`` (a contiguous view of the shared region) gets ``src``'s values; ``src`` is plain (`check_plain`).

    A contiguous ``src`` is copied as raw bytes from its storage (checked to hold them), so no PyTorch kernel
    reads it; a strided one goes through ``copy_`` (a plain tensor's copy only moves data)."""
    nbytes = src.numel() * src.element_size()
    if dst.numel() != src.numel() or dst.dtype != src.dtype or not dst.is_contiguous():
        raise ValueError("copy_bytes: destination does not match the source")
    if nbytes == 0:
        return
    if src.is_contiguous():
        storage = src.untyped_storage()
        start = src.storage_offset() * src.element_size()
        if start < 0 or start + nbytes > storage.nbytes():
            raise NotPlain(f"the output's sizes ({tuple(src.shape)}) reach past its storage ({storage.nbytes()} "
                           "bytes)")
        ctypes.memmove(dst.data_ptr(), storage.data_ptr() + start, nbytes)
    else:
        dst.view(src.shape).copy_(src)
