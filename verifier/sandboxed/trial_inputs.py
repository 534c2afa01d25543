"""Runs INSIDE the reference sandbox: the value shapes of the correctness trials' inputs.

Each trial draws the task's own inputs from ``get_inputs()`` with a secret seed; some trials then
reshape their floating values (integer inputs such as class indices are left alone):

* ``scale`` (x4), ``negate``, ``shift`` (+3): kernels that assume a range, a sign or small values fail;
* ``heavy``: heavy-tailed rows and a few dominant elements -- a random ~2% of the slices along the first
  dimension scaled by 16-64 and ~0.1% of the elements by 100-1000. A reduction or loss estimated from a
  subset of rows or a stride of elements misses (or over-counts) the dominant ones, so sampling fails
  where it would pass on well-behaved inputs; closed forms that assume the task's distribution fail too.

The random choices come from torch's generator, seeded by the trial's secret seed before ``get_inputs()``.
"""
from __future__ import annotations

from typing import Callable

import torch


def _heavy(x: torch.Tensor) -> torch.Tensor:
    x = x.clone()
    if x.dim() >= 1 and x.shape[0] >= 8:
        rows = max(1, x.shape[0] // 50)
        idx = torch.randperm(x.shape[0])[:rows]
        factor = 16.0 + 48.0 * torch.rand(rows, dtype=torch.float64)
        x[idx] = (x[idx].double() * factor.view(-1, *([1] * (x.dim() - 1)))).to(x.dtype)
    n = x.numel()
    if n:
        k = max(1, n // 1000)
        pos = torch.randint(0, n, (k,))
        flat = x.view(-1)
        flat[pos] = (flat[pos].double() * (100.0 + 900.0 * torch.rand(k, dtype=torch.float64))).to(x.dtype)
    return x


PERTURBATIONS: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "none": lambda t: t,
    "scale": lambda t: t * 4.0,
    "negate": lambda t: -t,
    "shift": lambda t: t + 3.0,
    "heavy": _heavy,
}
