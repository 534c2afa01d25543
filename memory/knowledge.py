"""Which seed knowledge fits a task: seed items ranked by how specifically they match it, not by file order.

Round 2's selection took the backend's core item and then category matches in file order, so a softmax prompt got
the candidate format, OpenMP and SIMD (items that list eight and six categories) and never the stable-softmax item
that says to subtract the maximum. Here every non-core seed item gets a score from what it says it is about
(front matter: ``ops``, ``categories``, ``apis``, its title and key) against what the task is:

* **ops** (weight 3 each): the task's traced op graph (:func:`task_ops`, the meta-device probe of
  :mod:`evokernel.tasks.category`) against the item's ``ops``; only ops that carry the operator's meaning count
  (softmax, mean, matmul, max_pool, gelu...), not arithmetic glue (add, mul, views);
* **name** (weight 2 each): words of the task's name (``14_rms_norm``, KernelBench's ``23_Softmax``, camel case
  split) found in the item's title or key: a decomposed RMSNorm traces to ``mean``/``rsqrt`` only, but its name says
  what it is;
* **category** (1 + 1/number of the item's categories): an item about one category is more specific than one that
  lists eight;
* **apis** (0.5 each, at most 2): API names seen in the code of the retrieved traces.

Items that match nothing are not shown. Ties keep file order.
"""
from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

__all__ = ["name_words", "rank_knowledge", "score", "task_ops"]

_cache: dict[str, frozenset[str]] = {}
# op classes that say what an operator is (evokernel.tasks.category.op_class); elementwise arithmetic does not
_MEANINGFUL = {"matmul", "convolution", "attention", "normalization", "pooling", "softmax", "reduction", "scan", "loss",
               "activation"}
_STOP = {"the", "and", "with", "for", "dim", "model", "over", "from", "into", "then", "of", "op", "ops", "new", "task",
         "one", "two", "per", "any", "all", "fast", "using", "elementwise", "kernel"}


def _as_list(v: Any) -> list[str]:
    if v is None:
        return []
    if isinstance(v, str):
        try:
            parsed = json.loads(v)
        except json.JSONDecodeError:
            return [v]
        return [str(x) for x in parsed] if isinstance(parsed, list) else [v]
    return [str(x) for x in v]


def task_ops(task: Any) -> frozenset[str]:
    """The meaningful ops of the task's traced graph (normalised names: ``softmax``, ``mean``, ``max_pool``), cached
    per task key; empty when the task cannot be probed."""
    key = getattr(task, "key", None)
    if key is not None and key in _cache:
        return _cache[key]
    try:
        from evokernel.tasks.category import op_class, probe

        p = probe(task.source, str(getattr(task, "path", "<task>")))
        ops = frozenset(o.name for o in p.ops if op_class(o.name, o.tensor_args) in _MEANINGFUL)
    except Exception:  # noqa: BLE001 - no ops is a valid answer: the other signals still rank
        ops = frozenset()
    if key is not None:
        _cache[key] = ops
    return ops


def name_words(text: str) -> set[str]:
    """Lower-case words of a name or a title: ``23_Softmax`` -> {softmax}, ``RMSNorm_eps`` -> {rms, norm, eps}."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text))
    return {w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if len(w) >= 3 and not w.isdigit() and w not in _STOP}


def score(meta: dict[str, Any], key: str, *, ops: Iterable[str] = (), category: str | None = None,
          name: str = "", apis: Iterable[str] = ()) -> float:
    """How specifically one seed item (its metadata and key) matches the task (see the module docstring)."""
    item_ops = {o.lower() for o in _as_list(meta.get("ops"))}
    cats = [c for c in _as_list(meta.get("categories")) if c != "*"]
    words = name_words(f"{meta.get('title', '')} {key}")
    s = 3.0 * len(item_ops & set(ops))
    s += 2.0 * len(name_words(name) & words)
    if category and category in cats:
        s += 1.0 + 1.0 / len(cats)
    s += 0.5 * min(len(set(apis)), 2)
    return s


def rank_knowledge(items: list[Any], *, ops: Iterable[str] = (), category: str | None = None, name: str = "",
                   apis_of: Any = None, limit: int = 3) -> list[Any]:
    """The best ``limit`` of ``items`` (MemoryItems) by :func:`score`, ties in their order; items scoring 0 are
    dropped. ``apis_of(item)`` gives the APIs of an item that the retrieved code uses."""
    ops = set(ops)
    scored = []
    for i, it in enumerate(items):
        s = score(it.meta, it.key, ops=ops, category=category, name=name,
                  apis=apis_of(it) if apis_of is not None else ())
        if s > 0:
            scored.append((-s, i, it))
    return [it for _, _, it in sorted(scored, key=lambda t: (t[0], t[1]))[:max(limit, 0)]]
