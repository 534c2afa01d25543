"""Runs INSIDE the reference sandbox: new values for forward's Python float arguments in the ``special`` and
``distinct`` trials.

A forward argument that is not a tensor (NPUKernelBench's attributes: an ``alpha``, an ``eps``; KernelBench's
matrix-scalar product ``A * s``) travels to both models by value in the call template (`trial_inputs.encode_args`),
as ``get_inputs()`` gave it. Without this module it held that one value in every trial, so a kernel that ignored it
and hard-coded the drawn value passed (red team round 9, ``rt9_scalar_arg_hardcoded``).

In the trials named in `PLANTED_IN`, every Python float of the template (a forward argument, or an element of a
list/tuple argument) other than 0.0 and non-finite ones gets a new value: its magnitude scaled by a factor drawn
log-uniform from [1/`FACTOR_MAX`, 1/`FACTOR_MIN`] or [`FACTOR_MIN`, `FACTOR_MAX`] (never within 25% of the drawn
value, so a hard-coded one is off by far more than any tolerance), its sign kept in ``special`` and flipped in
``distinct`` (`FLIP_IN`). So every verification judges the argument at two other values, one of each sign.

A new value is kept only if **the reference accepts it**: the task's ``Model`` runs on the trial's drawn tensors
with it without an exception and gives finite floating outputs (``accepts``, given by the worker, as for
`integer_inputs`). Every float is tried at once first (one forward); if that is refused, each float alone on top of
those kept so far, with the sign flip first and then the drawn sign (an exponent that must stay positive keeps its
sign), keeping the first the reference accepts; a float whose every try is refused keeps ``get_inputs()``'s value.
Both models receive the same template (the worker sends it with the inputs).

Python ints and bools are left as they are: they are a dimension, a size, ``k`` of a top-k, a flag -- structure, as a
tensor's shape is, not data (docs/verifier.md, "Limits we know of"). Strings, None and dtypes likewise.
The factors come from torch's generator, seeded by the trial's secret seed, so the same seed gives the same values.
"""
from __future__ import annotations

import copy
import math
from typing import Any, Callable

import torch

PLANTED_IN = ("special", "distinct")  # the perturbations whose call template gets new float values
FLIP_IN = ("distinct",)  # ... and those where the new value's sign is the drawn value's opposite (tried first)
FACTOR_MIN = 1.25  # |new| / |drawn| is log-uniform in [1/FACTOR_MAX, 1/FACTOR_MIN] or [FACTOR_MIN, FACTOR_MAX]
FACTOR_MAX = 4.0


def float_paths(template: list[Any] | None) -> list[tuple[int, ...]]:
    """Where the template holds a Python float this module replaces: (entry, index in a list/tuple, ...) per float,
    0.0 and NaN/Inf excluded (a zero scales to itself; a non-finite value is a mode more than a number)."""
    out: list[tuple[int, ...]] = []

    def walk(v: Any, path: tuple[int, ...], depth: int) -> None:
        if type(v) is float:
            if v != 0.0 and math.isfinite(v):
                out.append(path)
        elif isinstance(v, list) and len(v) == 2 and v[0] in ("list", "tuple") and isinstance(v[1], list) \
                and depth < 16:
            for j, item in enumerate(v[1]):
                walk(item, path + (j,), depth + 1)

    for i, entry in enumerate(template or []):
        if isinstance(entry, list) and len(entry) == 2 and entry[0] == "v":
            walk(entry[1], (i,), 0)
    return out


def _get(template: list[Any], path: tuple[int, ...]) -> Any:
    v = template[path[0]][1]
    for j in path[1:]:
        v = v[1][j]
    return v


def _with(template: list[Any], values: dict[tuple[int, ...], float]) -> list[Any]:
    """A copy of ``template`` with the floats at the given paths replaced."""
    out = copy.deepcopy(template)
    for path, value in values.items():
        if len(path) == 1:
            out[path[0]][1] = value
            continue
        holder = out[path[0]][1]
        for j in path[1:-1]:
            holder = holder[1][j]
        holder[1][path[-1]] = value
    return out


def factor() -> float:
    """A magnitude factor: log-uniform in [`FACTOR_MIN`, `FACTOR_MAX`], inverted with probability 1/2."""
    u = float(torch.rand((), dtype=torch.float64))
    f = FACTOR_MIN * (FACTOR_MAX / FACTOR_MIN) ** u
    return f if float(torch.rand(())) < 0.5 else 1.0 / f


def plant(template: list[Any] | None, accepts: Callable[[list[Any]], bool], flip: bool) -> list[Any] | None:
    """``template`` with new values for its floats (`float_paths`) where ``accepts`` (the reference runs with that
    template on the trial's tensors without error and with finite outputs) holds; with ``flip`` (the ``distinct``
    trials) each new value has the opposite sign first, the drawn sign if the reference refuses that. A new template;
    the one given is not modified. None or a template without floats is returned as it is."""
    paths = float_paths(template)
    if not paths:
        return template
    assert template is not None
    tries: dict[tuple[int, ...], list[float]] = {}
    for path in paths:  # every draw first: how many forwards follow does not change the values
        v = _get(template, path)
        scaled = v * factor()
        tries[path] = [-scaled, scaled] if flip else [scaled]
    whole = _with(template, {p: t[0] for p, t in tries.items()})
    if accepts(whole):
        return whole
    kept: dict[tuple[int, ...], float] = {}
    for path in paths:
        for value in tries[path]:
            if accepts(_with(template, {**kept, path: value})):
                kept[path] = value
                break
    return _with(template, kept)
