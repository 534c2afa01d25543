"""Identical code is not judged again without need: the verdict of a candidate whose code (its hash) this run's
verifier already judged for the same task, under the same judging settings, is reused (issue 32: a refinement
identical to its start point was verified again).

The attempt still counts (budget, reward, memory item, run log); only the verifier's work is skipped. The verdict
is the earlier one, marked ``reused_from`` (the earlier attempt's call id) with a line in its feedback, so a reader
of the run log and the model see that nothing new was learned.

What may be reused (a positive rule; red-team round 5 reused a lucky verdict and one the LLM judge never read):

* A verdict is one sample (secret seeds, and a kernel may decide on its own coin per process), so the worse one
  wins: once any judgement of the code failed, that failure is the code's verdict; a feasible verdict is reused
  only after `CONFIRM` independent judgements of the same code all found it feasible (the first resubmission of
  feasible code is judged again, with fresh seeds).
* Only complete verdicts: not the ``verifier`` gate (our failure to judge, not the candidate's), not one the opt-in
  LLM judge gave no opinion on (the endpoint down, a reply without a verdict line), not any of a run with review on
  (a reviewer sees every verdict).
* Only under the settings that judged it (`reuse_key`: run, task, backend, strict mode, the compile baseline, the
  LLM judge's spec) and the code that judged it: given the run's directory (``store``) every judgement is kept in
  ``verdicts.jsonl`` with the code version (evokernel.runtime.code_version), so a resumed run (a new process, a new
  verifier) reuses what the run judged before its stop -- but only of the same code (an upgrade or a fix in between
  means judging again).
"""
from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CONFIRM", "code_hash", "complete", "earlier_verdict", "record_verdict", "reuse_key"]

CONFIRM = 2  # feasible judgements of the same code before a feasible verdict is reused
NOT_REUSED = {"verifier"}  # gates that say nothing about the code


@dataclass
class _Judged:
    """The judgements of one code under one key: the verdict that stands (the first failure, else the first
    feasible one), its call id, and how many judgements found it feasible."""
    call_id: str
    verdict: dict[str, Any]
    feasible_count: int = 0

    def add(self, call_id: str, verdict: dict[str, Any]) -> None:
        if not self.verdict.get("feasible"):
            return  # a failure stands
        if not verdict.get("feasible"):
            self.call_id, self.verdict = call_id, dict(verdict)
            return
        self.feasible_count += 1

    def reusable(self) -> bool:
        return not self.verdict.get("feasible") or self.feasible_count >= CONFIRM


def _add(slot: dict[tuple[str, str], _Judged], key: tuple[str, str], call_id: str, verdict: dict[str, Any]) -> None:
    """One more judgement of ``key``'s code into ``slot``."""
    if key in slot:
        slot[key].add(call_id, verdict)
    else:
        slot[key] = _Judged(call_id, dict(verdict), 1 if verdict.get("feasible") else 0)


@dataclass
class _Kept:
    """What one verifier object has judged: (key, code hash) -> its judgements, and the run dirs read."""
    verdicts: dict[tuple[str, str], _Judged] = field(default_factory=dict)
    loaded: set[str] = field(default_factory=set)


_lock = threading.Lock()
# per verifier object (weakly: a new verifier at a freed one's address never sees its verdicts)
_kept: "weakref.WeakKeyDictionary[Any, _Kept]" = weakref.WeakKeyDictionary()
_strong: dict[int, _Kept] = {}  # verifiers without weak references


def _of(verifier: Any) -> _Kept:
    try:
        return _kept.setdefault(verifier, _Kept())
    except TypeError:  # not weakly referenceable (a plain object in tests): kept by id for the process's life
        return _strong.setdefault(id(verifier), _Kept())


def _version() -> str:
    from evokernel.runtime.code_version import code_version

    return code_version()


def code_hash(source: str) -> str:
    """The hash the run records for a candidate (``candidate.code_hash``); any str, a lone surrogate included (a
    model's reply can hold one: red team rt7's run stopped on the UnicodeEncodeError here)."""
    return hashlib.sha256(source.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def reuse_key(ctx: Any, task_key: str) -> str:
    """The key a verdict is kept under: the run, the task and every setting that changes how it is judged."""
    return (f"{ctx.run_id}|{task_key}|backend={ctx.backend}|strict={bool(ctx.strict)}"
            f"|baseline={bool(ctx.compile_baseline)}|judge={ctx.llm_judge or ''}")


def complete(verdict: dict[str, Any]) -> bool:
    """Whether every judge that was on gave its opinion: a verdict the LLM judge was asked about but gave none on
    (``details.llm_judge.flagged`` None) is not complete."""
    details = verdict.get("details")
    opinion = details.get("llm_judge") if isinstance(details, dict) else None
    return not (isinstance(opinion, dict) and opinion.get("flagged") is None)


def _kept_verdict(verdict: Any) -> bool:
    return isinstance(verdict, dict) and verdict.get("failed_gate") not in NOT_REUSED and complete(verdict)


def record_verdict(verifier: Any, task_key: str, source: str, verdict: dict[str, Any], call_id: str = "",
                   store: Any = None) -> None:
    """Add one judgement of this task's code; ``store`` (a RunDir) keeps it on disk for a resumed run. Incomplete
    verdicts (`complete`) and the ``verifier`` gate's are neither kept nor stored."""
    if not _kept_verdict(verdict):
        return
    digest = code_hash(source)
    with _lock:
        _add(_of(verifier).verdicts, (task_key, digest), call_id, verdict)
    if store is not None:
        store.append_verdict({"task_key": task_key, "code_hash": digest, "call_id": call_id,
                              "code_version": _version(), "verdict": verdict})


def _read_store(verifier: Any, store: Any) -> None:
    """The judgements ``store`` kept under this code version, into the verifier's slot (once per run dir)."""
    where = str(store.path)
    with _lock:
        done = _of(verifier).loaded
        if where in done:
            return
        done.add(where)
    version = _version()
    got: dict[tuple[str, str], _Judged] = {}
    for rec in store.verdicts():
        task_key, digest, verdict = rec.get("task_key"), rec.get("code_hash"), rec.get("verdict")
        if (rec.get("code_version") != version or not isinstance(task_key, str) or not isinstance(digest, str)
                or not _kept_verdict(verdict)):
            continue
        _add(got, (task_key, digest), str(rec.get("call_id") or ""), verdict)
    with _lock:
        slot = _of(verifier).verdicts
        for key, value in got.items():
            slot.setdefault(key, value)


def earlier_verdict(verifier: Any, task_key: str, digest: str, store: Any = None) -> dict[str, Any] | None:
    """The verdict that stands for this task's code of hash ``digest`` (judged by ``verifier`` or, given
    ``store``, by the run before a resume), marked as reused; None when the code must be judged (never judged, or
    feasible but not yet confirmed `CONFIRM` times)."""
    if store is not None:
        _read_store(verifier, store)
    with _lock:
        got = _of(verifier).verdicts.get((task_key, digest))
        if got is None or not got.reusable():
            return None
        call_id, verdict = got.call_id, dict(got.verdict)
    note = (f"(the same code as an earlier attempt{' (' + call_id + ')' if call_id else ''}: its verdict is reused, "
            "nothing new was judged; change the code to learn something)")
    return dict(verdict, reused_from=call_id or digest, feedback=f"{note}\n{verdict.get('feedback') or ''}".rstrip())
