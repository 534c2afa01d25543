"""Runs INSIDE the sandbox: recorders of the ATen operators dispatched during ``forward``.

* `OpRecorder` (candidate workers, checked calls): every operator, and those outside `ALLOWED_OPS`
  (allocation, views, copies) as violations -- a tripwire behind the glue allow-list and the binary judge,
  which already make PyTorch compute impossible in a candidate's process -- and, with
  `data_movement.Movement`, every copy that rearranges data and every returned output that is not the
  candidate's own memory (`check_outputs`): views and copies may not do a data-movement task's work;
* `ShapeRecorder` (the trusted reference): each operator with its tensors' shapes and dtypes, from which
  the ascend-sim latency model estimates the eager reference on an NPU;
* `ScaleRecorder` (the trusted reference's float64 run): the largest root-mean-square of any floating tensor
  the forward computes -- the magnitude float rounding acts on, from which the correctness gate derives the
  noise floor of an output whose exact value cancels to (near) zero.

Nothing here is trusted by the parent: it runs in the candidate's process.
"""
from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from evokernel.verifier.sandboxed.data_movement import Movement


# ATen operators that allocate, reshape or move memory without computing from the data.
ALLOWED_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "new_zeros", "new_ones",
    "zeros", "zeros_like", "ones", "ones_like", "full", "full_like", "new_full", "zero_", "fill_",
    "view", "_unsafe_view", "reshape", "as_strided", "expand", "permute", "transpose", "t", "unsqueeze",
    "squeeze", "flatten", "unflatten", "select", "slice", "narrow", "split", "split_with_sizes", "chunk",
    "unbind", "detach", "alias", "lift_fresh", "lift_fresh_copy", "clone", "contiguous", "copy_",
    "view_as", "expand_as", "movedim", "swapaxes", "swapdims", "resize_", "set_", "_reshape_alias",
    "sym_size", "sym_stride", "sym_numel", "sym_storage_offset", "is_contiguous", "size", "stride", "dim",
    "numel", "is_same_size", "_has_compatible_shallow_copy_type", "empty_permuted",
})


class OpRecorder(TorchDispatchMode):
    """Records every ATen operator dispatched while active (also those called from C++ extensions).

    ``violations`` maps an operator outside `ALLOWED_OPS` to its count, and a data-movement finding
    (`data_movement.FINDING_PREFIX` + text) to its count."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}
        self.violations: dict[str, int] = {}
        self.movement = Movement()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        name = func.overloadpacket.__name__
        self.calls[name] = self.calls.get(name, 0) + 1
        bad = name not in ALLOWED_OPS
        if name == "copy_" and len(args) >= 2 and isinstance(args[1], torch.Tensor):
            bad = args[0].dtype != args[1].dtype  # a copy that converts dtype is compute
        if bad:
            self.violations[name] = self.violations.get(name, 0) + 1
        out = func(*args, **(kwargs or {}))
        self.movement.op(name, args, kwargs or {}, out)
        if self.movement.findings:
            self.violations.update(self.movement.findings)
        return out

    def check_outputs(self, outs: list[Any], inputs: list[Any], model: Any) -> None:
        """After ``forward``: the returned tensors must be the candidate's own memory (data_movement.py)."""
        self.movement.outputs(outs, inputs, model)
        self.violations.update(self.movement.findings)
        self.movement.written.clear()


class ShapeRecorder(TorchDispatchMode):
    """Records each ATen operator with the shapes and dtypes of its tensor inputs and outputs (used on
    the trusted reference to model its eager latency on an NPU: one kernel per operator)."""

    MAX_RECORDS = 10_000

    def __init__(self) -> None:
        super().__init__()
        self.records: list[dict[str, Any]] = []

    @staticmethod
    def _describe(value: Any) -> list[dict[str, Any]]:
        flat = value if isinstance(value, (list, tuple)) else [value]
        out = []
        for v in flat:
            if isinstance(v, torch.Tensor):
                out.append({"shape": list(v.shape), "dtype": str(v.dtype).replace("torch.", "")})
            elif isinstance(v, (list, tuple)):
                out += ShapeRecorder._describe(v)
        return out

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if len(self.records) < self.MAX_RECORDS:
            ins = self._describe(list(args) + list((kwargs or {}).values()))
            self.records.append({"op": str(func), "inputs": ins, "outputs": self._describe(out)})
        return out


class ScaleRecorder(TorchDispatchMode):
    """The largest root-mean-square over the floating tensors each operator returns (the working scale)."""

    def __init__(self) -> None:
        super().__init__()
        self.scale = 0.0

    def note(self, value: Any) -> None:
        for v in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(v, (list, tuple)):
                self.note(v)
            elif isinstance(v, torch.Tensor) and v.is_floating_point() and v.numel() > 0:
                rms = float(v.detach().double().square().mean().sqrt())
                if rms == rms and rms != float("inf"):  # a NaN/Inf intermediate says nothing about rounding
                    self.scale = max(self.scale, rms)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.note(out)
        return out
