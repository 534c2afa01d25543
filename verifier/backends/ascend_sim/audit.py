"""What the trusted parent checks in the emulator's reports before it models a latency from them (trusted side).

The reports come from the candidate's process, where its kernel runs beside the emulator's counters. The
parent therefore refuses reports that claim less than the data requires, comparing them with what it knows
independently of that process:

* **the tiling**: every report ran a tiling the host process computed in this verdict (host.py: it never saw
  the data), with its block count: a report whose blocks are not that many, or whose tiling bytes, key or
  workspace are other than served, describes another run;
* **the outputs**: every byte of the outputs the task returns was written by an Ascend C API call
  (DataCopy, DataCopyPad, Fixpipe, SetValue, atomic adds: the runtime marks them in a bitmap per output and
  reports the covered bytes), so the covered bytes of a forward's reports are at least the bytes of the
  outputs the parent compared (when the binding poisons its outputs, as ``at::empty`` does: a byte the kernel
  did not write stays NaN and fails correctness, so a correct output is a written one); with outputs filled
  by value (``at::zeros``) the covered bytes are at least the changed bytes the runtime counted;
* **the hardware constants**: the block schedules were made with the constants the parent sent;
* **the schedules against the counters**: in every block, each pipe is busy at most the block's makespan,
  and each copy pipe (MTE2, MTE3, FIX) at least the time its own GM bytes and copies take at the modelled
  bandwidth, so zeroing a schedule while keeping the traffic (or the reverse) does not pass.

The GM traffic floor (a forward reads every input byte and writes every output byte) stays in trials.py
(`check_modelled_traffic`). Pure Python; each problem is one sentence for the hack gate's feedback.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from .hardware import Ascend910B
from .project import Project

# the binding's allocations that leave an output's bytes as they were filled (not the NaN poison of at::empty)
_VALUE_FILLS = re.compile(r"\bat::(zeros|zeros_like|ones|ones_like|full|full_like)\b|\.(fill_|zero_)\s*\(")
TOLERANCE = 1e-6  # relative slack for the floating-point sums of a schedule


def tiling_id(t: dict[str, Any]) -> str:
    """A tiling's identity: what the kernel half runs from (blockDim, key, schedule mode, bytes, workspaces)."""
    key = json.dumps([int(t["block_dim"]), int(t["tiling_key"]), int(t["schedule_mode"]), str(t["data_hex"]),
                      [int(w) for w in t["workspace_sizes"]]])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def poisoned_outputs(project: Project | None) -> bool:
    """Whether every output the binding allocates starts as NaN bytes (at::empty / empty_like)."""
    return project is not None and not _VALUE_FILLS.search(project.sources.get("python_bind_src", ""))


def _tiling_of(report: dict[str, Any]) -> dict[str, Any] | None:
    t = report.get("tiling")
    if not isinstance(t, dict):
        return None
    return {"block_dim": report.get("block_dim"), "tiling_key": report.get("tiling_key"),
            "schedule_mode": t.get("schedule_mode"), "data_hex": t.get("data_hex"),
            "workspace_sizes": t.get("workspace_sizes")}


def _num(x: Any) -> float:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(float(x)) else math.nan


def _schedule_problems(report: dict[str, Any], hw: Ascend910B) -> list[str]:
    problems = []
    used = report.get("hw_model") or {}
    sent = hw.runtime_dict()
    differ = sorted(k for k, v in sent.items() if k != "name"
                    and not math.isclose(_num(used.get(k)), float(v), rel_tol=1e-9))
    if differ:
        problems.append("the block schedules were not made with the hardware constants the verifier sent ("
                        + ", ".join(differ[:4]) + ")")
    copy_pipes = (("mte2", hw.mte2_bytes_per_cycle, hw.mte2_setup_cycles),
                  ("mte3", hw.mte3_bytes_per_cycle, hw.mte3_setup_cycles),
                  ("fix", hw.fix_bytes_per_cycle, hw.fix_setup_cycles))
    for b in report.get("blocks") or []:
        t = b.get("timing_estimate") if isinstance(b, dict) else None
        if not isinstance(t, dict):
            problems.append(f"block {b.get('block') if isinstance(b, dict) else '?'} has no schedule")
            continue
        cycles = _num(t.get("cycles"))
        busy = t.get("busy_cycles") or {}
        gm = t.get("gm_bytes") or {}
        copies = t.get("copies") or {}
        where = f"block {b.get('block')}" + (f" ({b.get('core')})" if b.get("core") else "")
        if not cycles >= 0:
            problems.append(f"{where}: its schedule has no valid length")
            continue
        for pipe, v in busy.items():
            if not _num(v) <= cycles * (1 + TOLERANCE) + 1e-6:
                problems.append(f"{where}: the {pipe} pipe is busy {_num(v):.0f} cycles in a block of {cycles:.0f}")
        for pipe, per_cycle, setup in copy_pipes:
            need = _num(gm.get(pipe, 0)) / per_cycle + _num(copies.get(pipe, 0)) * setup
            if not _num(busy.get(pipe, 0)) >= need * (1 - TOLERANCE) - 1e-6:
                problems.append(f"{where}: {pipe} moved {_num(gm.get(pipe, 0)):.0f} GM bytes in "
                                f"{_num(copies.get(pipe, 0)):.0f} copies, which take at least {need:.0f} cycles, but "
                                f"the pipe was busy {_num(busy.get(pipe, 0)):.0f}")
    return problems


def audit(trials: list[list[dict[str, Any]]], served: dict[str, dict[str, Any]], io_bytes: tuple[int, int] | None,
          project: Project | None, hw: Ascend910B | None = None) -> list[str]:
    """Problems with the reports of the correctness trials (one list of reports per trial, in call order)."""
    hw = hw or Ascend910B()
    problems: list[str] = []
    poisoned = poisoned_outputs(project)
    for k, reports in enumerate(trials):
        covered = changed = 0
        ok_reports = [r for r in reports if isinstance(r, dict) and r.get("status") == "ok"]
        if len(ok_reports) != len(reports):
            continue  # a run that stopped failed the runtime gate already
        for r in ok_reports:
            label = f"trial {k + 1}, call of {r.get('op_type')}"
            t = _tiling_of(r)
            try:
                tid = tiling_id(t) if t is not None else None
            except (KeyError, TypeError, ValueError):
                tid = None
            if tid not in served:
                problems.append(f"{label}: the kernel ran a tiling the host process did not compute (bytes, block "
                                "count, key or workspace differ from what TilingFunc returned)")
                continue
            blocks = [b for b in r.get("blocks") or [] if isinstance(b, dict)]
            mix = any("ai_core" in b for b in blocks)
            ran = len({b.get("ai_core") for b in blocks}) if mix else len({b.get("block") for b in blocks})
            omitted = r.get("blocks_omitted") or {}  # units summarised for the report's size (report_size.py)
            ran += int(omitted.get("units", 0))
            listed = len(blocks) + int(omitted.get("blocks", 0))
            if ran != served[tid]["block_dim"] or listed != r.get("blocks_run", listed):
                problems.append(f"{label}: the report shows {ran} block(s) but TilingFunc set blockDim "
                                f"{served[tid]['block_dim']}")
            problems += [f"{label}: {p}" for p in _schedule_problems(r, hw)]
            for a in r.get("args") or []:
                if isinstance(a, dict) and a.get("kind") == "output":
                    covered += int(_num(a.get("covered_bytes")) if _num(a.get("covered_bytes")) >= 0 else 0)
                    changed += int(_num(a.get("changed_bytes")) if _num(a.get("changed_bytes")) >= 0 else 0)
        if not ok_reports:
            continue
        if poisoned and io_bytes is not None and covered < io_bytes[1]:
            problems.append(f"trial {k + 1}: the Ascend C API wrote {covered} output byte(s), but the operator returns "
                            f"{io_bytes[1]} correct bytes that started as NaN: the rest was written some other way "
                            "(write every output element with DataCopy / DataCopyPad / SetValue)")
        elif not poisoned and covered < changed:
            problems.append(f"trial {k + 1}: {changed} output byte(s) changed but the Ascend C API wrote only {covered}")
    return list(dict.fromkeys(problems))
