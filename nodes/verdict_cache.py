"""Identical code is not judged twice: the verdict of a candidate whose code (its hash) this run's verifier already
judged for the same task is reused (issue 32: a refinement identical to its start point was verified again).

The attempt still counts (budget, reward, memory item, run log); only the verifier's work is skipped. The verdict
is the earlier one, marked ``reused_from`` (the earlier attempt's call id) with a line in its feedback, so a reader
of the run log and the model see that nothing new was learned. Verdicts of the ``verifier`` gate (our failure to
judge, not the candidate's) are never reused, nor any verdict of a run with review on (a reviewer sees every
verdict). The cache is per run (its id is part of the key) and per verifier object in memory; given the run's
directory (``store``), every verdict is also kept in ``verdicts.jsonl`` there with the code version that judged it,
so a resumed run (a new process, a new verifier) reuses what the run judged before its stop -- but only verdicts
of the same code (evokernel.runtime.code_version: an upgrade or a fix in between means judging again).
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

__all__ = ["code_hash", "earlier_verdict", "record_verdict"]

_Slot = dict[tuple[str, str], tuple[str, dict[str, Any]]]


@dataclass
class _Kept:
    """What one verifier object has judged: (run, task, code hash) -> (call id, verdict), and the run dirs read."""
    verdicts: _Slot = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)


_lock = threading.Lock()
# per verifier object (weakly: a new verifier at a freed one's address never sees its verdicts)
_kept: "weakref.WeakKeyDictionary[Any, _Kept]" = weakref.WeakKeyDictionary()
_strong: dict[int, _Kept] = {}  # verifiers without weak references
NOT_REUSED = {"verifier"}  # gates that say nothing about the code


def _of(verifier: Any) -> _Kept:
    try:
        return _kept.setdefault(verifier, _Kept())
    except TypeError:  # not weakly referenceable (a plain object in tests): kept by id for the process's life
        return _strong.setdefault(id(verifier), _Kept())


def _version() -> str:
    from evokernel.runtime.code_version import code_version

    return code_version()


def code_hash(source: str) -> str:
    """The hash the run records for a candidate (``candidate.code_hash``)."""
    return hashlib.sha256(source.encode()).hexdigest()[:16]


def record_verdict(verifier: Any, task_key: str, source: str, verdict: dict[str, Any], call_id: str = "",
                   store: Any = None) -> None:
    """Keep ``verdict`` for this task's code; ``store`` (a RunDir) keeps it on disk for a resumed run."""
    if verdict.get("failed_gate") in NOT_REUSED:
        return
    digest = code_hash(source)
    with _lock:
        _of(verifier).verdicts[(task_key, digest)] = (call_id, dict(verdict))
    if store is not None:
        store.append_verdict({"task_key": task_key, "code_hash": digest, "call_id": call_id,
                              "code_version": _version(), "verdict": verdict})


def _read_store(verifier: Any, store: Any) -> None:
    """The verdicts ``store`` kept under this code version, into the verifier's slot (once per run dir)."""
    where = str(store.path)
    with _lock:
        done = _of(verifier).loaded
        if where in done:
            return
        done.add(where)
    version = _version()
    got = {}
    for rec in store.verdicts():
        task_key, digest, verdict = rec.get("task_key"), rec.get("code_hash"), rec["verdict"]
        if (rec.get("code_version") != version or not isinstance(task_key, str) or not isinstance(digest, str)
                or verdict.get("failed_gate") in NOT_REUSED):
            continue
        got[(task_key, digest)] = (str(rec.get("call_id") or ""), verdict)
    with _lock:
        slot = _of(verifier).verdicts
        for key, value in got.items():
            slot.setdefault(key, value)


def earlier_verdict(verifier: Any, task_key: str, digest: str, store: Any = None) -> dict[str, Any] | None:
    """The verdict ``verifier`` (or, given ``store``, the run before a resume) gave this task's candidate of hash
    ``digest``, marked as reused; None if none."""
    if store is not None:
        _read_store(verifier, store)
    with _lock:
        got = _of(verifier).verdicts.get((task_key, digest))
    if got is None:
        return None
    call_id, verdict = got
    note = (f"(the same code as an earlier attempt{' (' + call_id + ')' if call_id else ''}: its verdict is reused, "
            "nothing new was judged; change the code to learn something)")
    return dict(verdict, reused_from=call_id or digest, feedback=f"{note}\n{verdict.get('feedback') or ''}".rstrip())
