"""Identical code is not judged twice: the verdict of a candidate whose code (its hash) this run's verifier already
judged for the same task is reused (issue 32: a refinement identical to its start point was verified again).

The attempt still counts (budget, reward, memory item, run log); only the verifier's work is skipped. The verdict
is the earlier one, marked ``reused_from`` (the earlier attempt's call id) with a line in its feedback, so a reader
of the run log and the model see that nothing new was learned. Verdicts of the ``verifier`` gate (our failure to
judge, not the candidate's) are never reused, nor any verdict of a run with review on (a reviewer sees every
verdict). The cache is per run (its id is part of the key) and lives as long as the process and its verifier;
a resumed run judges again what it meets first.
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from typing import Any

__all__ = ["code_hash", "earlier_verdict", "record_verdict"]

_lock = threading.Lock()
# per verifier object (weakly: a new verifier at a freed one's address never sees its verdicts), then per
# (run, task, code hash)
_verdicts: "weakref.WeakKeyDictionary[Any, dict[tuple[str, str], tuple[str, dict[str, Any]]]]" = \
    weakref.WeakKeyDictionary()
_strong: dict[int, dict[tuple[str, str], tuple[str, dict[str, Any]]]] = {}  # verifiers without weak references
NOT_REUSED = {"verifier"}  # gates that say nothing about the code


def _slot(verifier: Any) -> dict[tuple[str, str], tuple[str, dict[str, Any]]]:
    try:
        return _verdicts.setdefault(verifier, {})
    except TypeError:  # not weakly referenceable (a plain object in tests): kept by id for the process's life
        return _strong.setdefault(id(verifier), {})


def code_hash(source: str) -> str:
    """The hash the run records for a candidate (``candidate.code_hash``)."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def record_verdict(verifier: Any, task_key: str, source: str, verdict: dict[str, Any], call_id: str = "") -> None:
    if verdict.get("failed_gate") in NOT_REUSED:
        return
    with _lock:
        _slot(verifier)[(task_key, code_hash(source))] = (call_id, dict(verdict))


def earlier_verdict(verifier: Any, task_key: str, digest: str) -> dict[str, Any] | None:
    """The verdict ``verifier`` gave this task's candidate of hash ``digest``, marked as reused; None if none."""
    with _lock:
        got = _slot(verifier).get((task_key, digest))
    if got is None:
        return None
    call_id, verdict = got
    note = (f"(the same code as an earlier attempt{' (' + call_id + ')' if call_id else ''}: its verdict is reused, "
            "nothing new was judged; change the code to learn something)")
    return dict(verdict, reused_from=call_id or digest, feedback=f"{note}\n{verdict.get('feedback') or ''}".rstrip())
