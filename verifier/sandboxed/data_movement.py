"""Runs INSIDE the sandbox: what PyTorch may move during ``forward`` (the positive rule on data movement).

Views and allocation are allowed glue, and so are the ATen copy operators a ``load_inline`` object may call, but a
pure data-movement task (nearest upsampling, a transpose, a concat, a slice) is *nothing but* a copy through a
view: if PyTorch's copy kernel may copy from any view, it does the whole task. So PyTorch's copies are allowed
only where they move nothing:

* **a copy duplicates a whole tensor byte for byte** -- a materialising copy (``clone``, ``copy_``,
  ``lift_fresh_copy``, and so a ``.contiguous()``/``reshape`` that has to copy, from the glue or from native
  code) must read a *whole* tensor (contiguous, from the first to the last byte of its storage) into a whole
  tensor of the same shape. A transpose, a broadcast, a strided, overlapping or partial read, a write at an
  offset or into a permuted view, a ``channels_last`` clone: each is a rearrangement, the native kernel's work;
* **``fill_``/``zero_`` fill a whole tensor with a number**, never with a tensor's element, and never a slice
  (native code that reads x[i] and fills row i of the output with it has PyTorch write the output); nor does
  an allocation's ``out=`` form (``full.out``, ``zeros.out``) write into a part of a tensor;
* **except that an input of forward may be made contiguous**: a copy whose source is one of forward's input
  tensors exactly as the verifier passed it (its data pointer, shape, strides and dtype) into a whole tensor
  (``x.contiguous()``, ``x.reshape(-1)`` of a non-contiguous input) moves nothing the task asks for -- the values
  are the input's own, in their logical order; only the layout the verifier chose changes. Some correctness trials
  pass non-contiguous input views (trial_inputs.py, `STRIDED_IN`), every other trial and every timed round
  contiguous inputs, where such a copy is a whole-tensor copy anyway;
* **and written back**: a copy from a whole tensor into one of forward's inputs exactly as given, of the same
  shape, moves the values back where they came from (``evokernel.cpu.load_cpp`` does it after the call for a view
  it had to copy for a pointer the kernel may write). It can only rewrite what the input holds: a trial whose
  input changed is refused by the inputs-unmodified check;
* **no operator reads a flagged tensor**: a negative, conjugate or zero-tensor bit has PyTorch compute (negate,
  conjugate, zero) whatever reads it, a whole-tensor copy included (red-team `rt4_neg_bit_copy_source`: an alias
  with the negative bit copied whole wrote -x);
* **the returned outputs are the candidate's**: each is a contiguous tensor (the worker copies the outputs out
  in order, so a returned transposed or broadcast view would be one more PyTorch rearrangement) whose bytes overlap
  no input, no tensor of the model (parameters, buffers, tensor attributes) and no tensor a PyTorch copy wrote
  during this forward.

`Movement` judges the operators as `op_recorder.OpRecorder` sees them and the outputs after ``forward``; each
breach is a *finding* (a short text). Like the recorder, nothing here is trusted by the parent beyond being a
tripwire that runs in the candidate's process.
"""
from __future__ import annotations

from typing import Any, Iterable

import torch

from evokernel.verifier.sandboxed.plain_tensor import value_flags

# ATen operators whose result holds bytes PyTorch copied from a tensor (not constants): source = first argument
CLONES = frozenset({"clone", "lift_fresh_copy", "contiguous"})
FILLS = frozenset({"fill_", "zero_"})  # in-place constants: a whole tensor at a time
# ATen allocations (also the construction guard's: init_guard.py): of constants, and of whatever the memory held
CONSTANT_FACTORIES = frozenset({"zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
                                "new_ones", "new_full", "scalar_tensor"})
BLANK_FACTORIES = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
                             "empty_permuted"})
# operators whose result is a fresh storage (an allocation: memory freed before may be handed out again)
FRESH = CLONES | CONSTANT_FACTORIES | BLANK_FACTORIES
FINDING_PREFIX = "data movement: "


def whole(t: torch.Tensor) -> bool:
    """Is ``t`` a whole tensor: contiguous in the standard order, from the first byte of its storage to the last?"""
    if t.numel() == 0:
        return True
    if not t.is_contiguous():
        return False
    storage = t.untyped_storage()
    return t.data_ptr() == storage.data_ptr() and t.numel() * t.element_size() == storage.nbytes()


def byte_range(t: torch.Tensor) -> tuple[int, int] | None:
    """[first, last) byte ``t`` can read (None: no element)."""
    if t.numel() == 0:
        return None
    lo = hi = 0
    for size, stride in zip(t.shape, t.stride()):
        span = (size - 1) * stride
        lo, hi = lo + min(span, 0), hi + max(span, 0)
    es = t.element_size()
    return t.data_ptr() + lo * es, t.data_ptr() + (hi + 1) * es


def storage_range(t: torch.Tensor) -> tuple[int, int] | None:
    """[first, last) byte of ``t``'s whole storage (None: empty)."""
    storage = t.untyped_storage()
    n = storage.nbytes()
    return (storage.data_ptr(), storage.data_ptr() + n) if n else None


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def model_tensors(model: Any) -> list[torch.Tensor]:
    """Every tensor a module tree holds: parameters, buffers and plain tensor attributes."""
    found: list[torch.Tensor] = []
    modules = model.modules() if isinstance(model, torch.nn.Module) else []
    for m in modules:
        found += [t for t in m.parameters(recurse=False)] + [t for t in m.buffers(recurse=False)]
        found += [v for v in vars(m).values() if isinstance(v, torch.Tensor)]
    return found


def _flat_tensors(values: Iterable[Any]) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out += _flat_tensors(v)
        elif isinstance(v, dict):
            out += _flat_tensors(v.values())
    return out


def _shape(t: torch.Tensor) -> str:
    return "x".join(str(s) for s in t.shape) or "scalar"


class Movement:
    """The data-movement rule over one ``forward``: `op` sees each dispatched operator with its result,
    `outputs` the returned tensors; `findings` counts each breach by its text."""

    def __init__(self) -> None:
        self.findings: dict[str, int] = {}
        # byte ranges of the storages PyTorch copies wrote, not the tensors (a held destination stays alive and
        # counted: one more difference between a recorded call and an unrecorded one). A fresh allocation over
        # such a range means its memory was freed and reused, so the range is dropped (`FRESH`).
        self.written: list[tuple[int, int]] = []
        self.given: set[tuple[Any, ...]] = set()  # forward's input tensors as the verifier passed them (`give`)

    @staticmethod
    def _key(t: torch.Tensor) -> tuple[Any, ...]:
        return (t.data_ptr(), tuple(t.shape), tuple(t.stride()), t.dtype)

    def give(self, inputs: Iterable[Any]) -> None:
        """The tensors forward is called with (before the call): a copy of one of them into a whole tensor is glue."""
        self.given = {self._key(t) for t in _flat_tensors(list(inputs)) if t.numel()}

    def _find(self, text: str) -> None:
        key = FINDING_PREFIX + text
        self.findings[key] = self.findings.get(key, 0) + 1

    def op(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any) -> None:
        if name in FRESH and self.written:
            for t in _flat_tensors([result]):
                new = storage_range(t)
                self.written = [r for r in self.written if not _overlap(r, new)]
        for t in _flat_tensors([*args, *kwargs.values()]):
            flags = value_flags(t)
            if flags:  # a copy (any operator) reading it would negate/conjugate/zero for the kernel
                self._find(f"aten::{name} read a tensor carrying the {' and the '.join(flags)} (PyTorch computes "
                           "its values when it reads it); pass plain tensors")
                return
        if name in CLONES or name == "copy_":
            if name == "copy_":
                dst, src = (args[0], args[1]) if len(args) >= 2 else (None, None)
            else:
                src = args[0] if args else kwargs.get("self")
                dst = kwargs.get("out", result)
            if not (isinstance(src, torch.Tensor) and isinstance(dst, torch.Tensor)):
                return
            written = storage_range(dst)
            if written is not None:
                self.written.append(written)
            if not whole(src) and not (self._key(src) in self.given and whole(dst)
                                       and tuple(src.shape) == tuple(dst.shape)):
                self._find(f"aten::{name} read a view (a transpose, broadcast, slice or strided window), not a "
                           "whole tensor")
            elif not whole(dst) and not (self._key(dst) in self.given and tuple(src.shape) == tuple(dst.shape)):
                self._find(f"aten::{name} wrote into a view (an offset, a slice or a permuted layout), not a whole "
                           "tensor")
            elif tuple(src.shape) != tuple(dst.shape) and src.numel() != dst.numel():
                self._find(f"aten::{name} broadcast a tensor of shape {_shape(src)} into {_shape(dst)}")
        elif isinstance(kwargs.get("out"), torch.Tensor) and not whole(kwargs["out"]):
            # an allocation's out= form (full.out, zeros.out, ...): a constant written into a slice is a scatter
            self._find(f"aten::{name} wrote a part of a tensor through out= (fill whole tensors only)")
        elif name in FILLS and args and isinstance(args[0], torch.Tensor):
            if name == "fill_" and len(args) >= 2 and isinstance(args[1], torch.Tensor):
                self._find("aten::fill_ filled with a tensor's element (fill with a number)")
            elif not whole(args[0]):
                self._find(f"aten::{name} wrote a part of a tensor (a constant per slice is a scatter; fill whole "
                           "tensors only)")

    def outputs(self, outs: list[Any], inputs: list[Any], model: Any) -> None:
        """The returned tensors: dense, the candidate's own memory, not written by a PyTorch copy."""
        theirs = [storage_range(t) for t in _flat_tensors(inputs) + model_tensors(model)]
        copied = self.written
        for o in outs:
            if not isinstance(o, torch.Tensor) or o.numel() == 0:
                continue
            if not o.is_contiguous():
                self._find("forward returned a non-contiguous view (a transpose, broadcast or strided window): "
                           "return a contiguous tensor your kernel wrote (empty_like keeps a non-contiguous "
                           "input's strides: use torch.empty(x.shape))")
                continue
            mine = byte_range(o)
            if any(_overlap(mine, r) for r in theirs):
                self._find("forward returned memory of an input or of the model (a view of it), not a tensor "
                           "your kernel wrote")
            elif any(_overlap(mine, r) for r in copied):
                self._find("forward returned a tensor a PyTorch copy wrote, not one your kernel wrote")
