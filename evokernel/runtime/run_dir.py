"""A run directory: the durable, human-readable record of an ``evokernel run``.

    RUN_DIR/run.json         run id, creation time, settings
    RUN_DIR/attempts.jsonl   one JSON line per attempt (the source of every reported number)
    RUN_DIR/summary.json     per-task results plus the paper's compile rate and correctness
    RUN_DIR/best/<task>.py   the fastest feasible kernel per task, a candidate `evokernel verify` accepts
    RUN_DIR/tokens.jsonl     LLM token and cost ledger (LLM generators only)
    RUN_DIR/replies.jsonl    each attempt's raw model reply (LLM generators only): what to read when a
                             weak model fails; a line repeated after a crash is the same reply
    RUN_DIR/verdicts.jsonl   each judged candidate's verdict by task and code hash, so a resumed run reuses it
                             for identical code as the run before the stop did (nodes/verdict_cache.py)
    RUN_DIR/checkpoints.sqlite  LangGraph checkpoints (resume)

Appends are idempotent by attempt id, so a resumed run that re-executes the last node of an
interrupted attempt does not log it twice. ``summary.json`` is recomputed from ``attempts.jsonl``.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Iterable, Iterator

ATTEMPTS = "attempts.jsonl"
REPLIES = "replies.jsonl"
VERDICTS = "verdicts.jsonl"
SUMMARY = "summary.json"


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S") + "-" + secrets.token_hex(3)


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _json_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order (a torn or foreign line skipped; none if no file)."""
    if not path.exists():
        return
    for raw in path.read_bytes().split(b"\n"):
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(rec, dict):
            yield rec


def safe_name(task_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", task_id)


class RunDir:
    def __init__(self, path: str | Path, run_id: str | None = None, settings: dict[str, Any] | None = None):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        meta_path = self.path / "run.json"
        if meta_path.exists():
            self.meta = json.loads(meta_path.read_text())
            if run_id and run_id != self.meta["run_id"]:
                raise ValueError(f"{self.path} holds run {self.meta['run_id']!r}, not {run_id!r}: "
                                 "give each run its own run directory")
        else:
            self.meta = {"run_id": run_id or self.path.name, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                         "settings": settings or {}}
            _write_atomic(meta_path, json.dumps(self.meta, indent=2) + "\n")
        self.run_id: str = self.meta["run_id"]
        self._lock = threading.Lock()
        self._records: list[dict[str, Any]] = []
        self._ids: set[str] = set()
        self._load()

    def _load(self) -> None:
        p = self.path / ATTEMPTS
        if not p.exists():
            return
        good = []
        torn = False
        for raw in p.read_bytes().split(b"\n"):
            if not raw.strip():
                continue
            try:
                rec = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                torn = True  # a crash mid-write: the attempt is redone on resume
                continue
            good.append(raw)
            if rec["attempt_id"] not in self._ids:
                self._ids.add(rec["attempt_id"])
                self._records.append(rec)
        if torn:
            _write_atomic(p, "".join(line.decode() + "\n" for line in good))

    def has(self, attempt_id: str) -> bool:
        return attempt_id in self._ids

    def append(self, record: dict[str, Any]) -> bool:
        """Log one attempt; False if it was already logged."""
        with self._lock:
            if record["attempt_id"] in self._ids:
                return False
            with (self.path / ATTEMPTS).open("a") as f:
                f.write(json.dumps(record) + "\n")
                f.flush()
                os.fsync(f.fileno())
            self._ids.add(record["attempt_id"])
            self._records.append(record)
            return True

    def append_reply(self, attempt_id: str, task: str, iteration: int, reply: str) -> bool:
        """Keep a model's raw reply (before the attempt's own line is appended); False if that attempt is
        already logged (a resumed run re-executing its last node)."""
        with self._lock:
            if attempt_id in self._ids:
                return False
            with (self.path / REPLIES).open("a") as f:
                f.write(json.dumps({"attempt_id": attempt_id, "task": task, "iteration": iteration,
                                    "reply": reply}) + "\n")
            return True

    def replies(self) -> dict[str, dict[str, Any]]:
        """attempt id -> its reply record (torn lines skipped, a repeated id keeps the last)."""
        return {rec["attempt_id"]: rec for rec in _json_objects(self.path / REPLIES) if "attempt_id" in rec}

    def append_verdict(self, record: dict[str, Any]) -> bool:
        """Keep one judged candidate's verdict (a JSON object); False (nothing written) when it is not JSON."""
        try:
            line = json.dumps(record, allow_nan=True)
        except (TypeError, ValueError):
            return False
        with self._lock, (self.path / VERDICTS).open("a") as f:
            f.write(line + "\n")
        return True

    def verdicts(self) -> list[dict[str, Any]]:
        """The kept verdict records, oldest first (a torn or foreign line is skipped)."""
        return [rec for rec in _json_objects(self.path / VERDICTS) if isinstance(rec.get("verdict"), dict)]

    def attempts(self, task: str | None = None) -> list[dict[str, Any]]:
        return [r for r in self._records if task is None or r["task"] == task]

    def write_best(self, task_id: str, source: str, latency_ms: float, task_path: str, estimated: bool = False,
                   backend: str = "cpu") -> Path:
        d = self.path / "best"
        d.mkdir(exist_ok=True)
        out = d / f"{safe_name(task_id)}.py"
        what = f"{latency_ms:.4f} ms estimated by the {backend} latency model" if estimated else \
            f"{latency_ms:.4f} ms when verified"
        flag = "" if backend == "cpu" else f" --backend {backend}"
        header = (f"# EvoKernel best kernel for {task_id} ({what})\n"
                  f"# verify: evokernel verify {task_path} {out}{flag}\n")
        _write_atomic(out, header + source)
        return out

    def task_summary(self, task_id: str) -> dict[str, Any]:
        return summarize_task(task_id, self.attempts(task_id))

    def write_summary(self, task_order: Iterable[str] | None = None) -> dict[str, Any]:
        summary = summarize(self._records, task_order)
        summary["run_id"] = self.run_id
        _write_atomic(self.path / SUMMARY, json.dumps(summary, indent=2) + "\n")
        return summary


def summarize_task(task_id: str, attempts: list[dict[str, Any]]) -> dict[str, Any]:
    attempts = sorted(attempts, key=lambda r: r["iteration"])
    feasible = [r for r in attempts if r["feasible"]]
    timed = [r for r in feasible if r.get("latency_ms")]  # latency metrics need a measured latency
    first = timed[0] if timed else None
    best = min(timed, key=lambda r: r["latency_ms"]) if timed else None
    return {
        "task": task_id,
        "feasible": bool(feasible),
        "first_feasible_iteration": feasible[0]["iteration"] if feasible else None,
        "first_latency_ms": first["latency_ms"] if first else None,
        "best_latency_ms": best["latency_ms"] if best else None,
        "speedup_vs_first": (first["latency_ms"] / best["latency_ms"]) if best else None,
        # the best kernel's own verdict: median of per-round ratios against eager timed in the same rounds
        "speedup_vs_eager": best.get("speedup_vs_eager") if best else None,
        # with the compile baseline: the same kernel vs torch.compile of the reference, or why compile failed
        "speedup_vs_compile": best.get("speedup_vs_compile") if best else None,
        "compile_error": next((r["compile_error"] for r in feasible if r.get("compile_error")), None),
        "feasible_kernels": len(feasible),
        # "estimate" when the backend models latency (ascend-sim) instead of measuring it
        "latency_kind": (best.get("latency_kind") or "measured") if best else None,
        "attempts": len(attempts),
        "compiled": sum(1 for r in attempts if r.get("compiled")),
    }


def summarize(records: list[dict[str, Any]], task_order: Iterable[str] | None = None) -> dict[str, Any]:
    """Per-task results plus the paper's CR (share of generated kernels that compile) and Acc (share of
    operators with a feasible kernel within the budget)."""
    # lazy: an upward edge (top-layers ignores it): numpy, only when a summary is written
    from evokernel.evals import metrics

    order = list(dict.fromkeys(list(task_order or []) + [r["task"] for r in records]))
    tasks = [summarize_task(t, [r for r in records if r["task"] == t]) for t in order]
    usage = metrics.tokens_cost_time(records)
    kinds = {t["latency_kind"] for t in tasks if t.get("latency_kind")}
    return {
        "tasks": tasks,
        "latency_kind": "estimate" if "estimate" in kinds else "measured",
        "attempts": len(records),
        "compile_rate": metrics.compile_rate(records),
        "correctness": metrics.correctness(records, order),
        "geomean_speedup_vs_eager": metrics.geomean(t["speedup_vs_eager"] for t in tasks if t["speedup_vs_eager"]),
        "geomean_speedup_vs_compile": metrics.geomean(t["speedup_vs_compile"] for t in tasks if t["speedup_vs_compile"]),
        "compile_baseline_failed": {t["task"]: t["compile_error"] for t in tasks if t["compile_error"]},
        "tokens_in": usage["tokens_in"],
        "tokens_out": usage["tokens_out"],
        "cost_usd": usage["cost_usd"],
    }
