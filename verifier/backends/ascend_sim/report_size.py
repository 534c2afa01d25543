"""The size of an emulator report on the wire: bounded by construction in the worker, restored in the parent.

The emulator writes one entry per block (about 1.6 KB each: counters, queues, the modelled schedule), so an honest
add with blockDim 4096 made a 5.4 MB report, over the message codec's 4 MiB limit (a protocol break, not a
verdict). Before a report leaves the worker (sandboxed/ascend_ops.py) `compact` bounds it:

1. lossless: consecutive units (a block; for a MIX kernel the blocks of one AI core) that are the previous unit
   again, only shifted by one unit (block index + the unit's size, ai_core + 1), become one unit carrying
   ``"repeat": n``. The blocks of an even split are a few kinds (the bigger ones, the smaller ones, the tail), so
   thousands of blocks become a handful of entries.
2. lossy, only when that is still over the report's budget: the units that do not fit become one summary,
   ``blocks_omitted`` (units, blocks, the sum and the largest of their critical-path cycles, their GM bytes and
   copies). The latency model dispatches them as units of their mean length with the longest one last (never
   shorter than they were: `omitted_units`), the audit counts them as run.
3. when even the report without its blocks is over budget (e.g. thousands of distinct violation messages), the
   report becomes a failed one (status ``report_too_large``): the run fails the runtime gate, with the sizes.

The parent calls `expand` on every report it receives (trusted/trials.py): repeats become blocks again, so the
latency model and the audit read per-block entries as before. A worker can forge any report (it always could);
expansion is bounded (`MAX_EXPANDED` blocks per reply) and malformed repeats are a ValueError.
"""
from __future__ import annotations

import json
from typing import Any

from .report_schema import MAX_BLOCKS

MAX_REPLY_REPORTS_BYTES = 3 << 20  # all reports of one reply (the codec's message limit is 4 MiB)
MIN_REPORT_BYTES = 48 << 10  # what every report of a reply is guaranteed (64 reports x 48 KiB = 3 MiB)
MAX_EXPANDED = MAX_BLOCKS  # blocks the parent restores per reply (65,535 blocks of a MIX kernel, 3 per AI core)
_ID_KEYS = ("block", "ai_core", "repeat")
_COPY_PIPES = ("mte2", "mte3", "fix")


def size(obj: Any) -> int:
    return len(json.dumps(obj, separators=(",", ":")))


def _units(blocks: list[Any]) -> list[list[Any]]:
    """Consecutive blocks of one AI core (MIX kernels: ``ai_core``), else one block each."""
    units: list[list[Any]] = []
    for b in blocks:
        core = b.get("ai_core") if isinstance(b, dict) else None
        if core is not None and units and isinstance(units[-1][0], dict) and units[-1][0].get("ai_core") == core:
            units[-1].append(b)
        else:
            units.append([b])
    return units


def _body(b: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in b.items() if k not in _ID_KEYS}


def _follows(first: list[Any], unit: list[Any], n: int) -> bool:
    """``unit`` is ``first`` shifted by ``n`` units (block + n * len, ai_core + n), all else equal."""
    if len(unit) != len(first):
        return False
    for a, b in zip(first, unit):
        if not (isinstance(a, dict) and isinstance(b, dict)) or "repeat" in a or "repeat" in b:
            return False
        if not (isinstance(a.get("block"), int) and b.get("block") == a["block"] + n * len(first)):
            return False
        if ("ai_core" in a) != ("ai_core" in b) or ("ai_core" in a and b["ai_core"] != a["ai_core"] + n):
            return False
        if _body(a) != _body(b):
            return False
    return True


def run_length(blocks: list[Any]) -> list[Any]:
    """Lossless: runs of shifted repeats of a unit as the unit with ``"repeat": n`` on each of its blocks."""
    out: list[Any] = []
    runs: list[tuple[list[Any], int]] = []
    for unit in _units(blocks):
        if runs and _follows(runs[-1][0], unit, runs[-1][1]):
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((unit, 1))
    for unit, n in runs:
        out += [{**b, "repeat": n} if n > 1 else b for b in unit]
    return out


def _critical(unit: list[dict[str, Any]]) -> dict[str, Any]:
    return max(unit, key=lambda b: float(b["timing_estimate"]["cycles"]))


def _summarise(units: list[tuple[list[dict[str, Any]], int]]) -> dict[str, Any]:
    cycles = [float(_critical(u)["timing_estimate"]["cycles"]) for u, _ in units]
    counts = [n for _, n in units]
    gm = {p: 0.0 for p in _COPY_PIPES}
    copies = {p: 0 for p in _COPY_PIPES}
    for u, n in units:
        for b in u:
            t = b["timing_estimate"]
            for p in _COPY_PIPES:
                gm[p] += n * float((t.get("gm_bytes") or {}).get(p, 0))
                copies[p] += n * int((t.get("copies") or {}).get(p, 0))
    return {"units": sum(counts), "blocks": sum(n * len(u) for u, n in units),
            "cycles_sum": sum(c * n for c, n in zip(cycles, counts)), "cycles_max": max(cycles),
            "gm_bytes": gm, "copies": copies}


def compact(report: dict[str, Any], budget: int) -> dict[str, Any]:
    """The report at most ``budget`` bytes of JSON (see the module docstring); the input is not changed."""
    blocks = report.get("blocks")
    if isinstance(blocks, list) and blocks:
        report = {**report, "blocks": run_length(blocks)}
    if size(report) <= budget:
        return report
    rest = size({**report, "blocks": []})
    if isinstance(blocks, list) and blocks and rest + 1024 < budget and all(
            isinstance(b, dict) and isinstance(b.get("timing_estimate"), dict) for b in blocks):
        entries = report["blocks"]
        grouped: list[tuple[list[dict[str, Any]], int]] = []
        for unit in _units(entries):
            grouped.append((unit, int(unit[0].get("repeat", 1))))
        kept: list[dict[str, Any]] = []
        room = budget - rest - 1024  # the summary's own bytes
        used = 0
        cut = len(grouped)
        for i, (unit, _n) in enumerate(grouped):
            need = sum(size(b) + 1 for b in unit)
            if used + need > room:
                cut = i
                break
            kept += unit
            used += need
        if cut == len(grouped):
            return {**report, "blocks": kept}
        if cut:  # (not even one unit fits: below)
            return {**report, "blocks": kept, "blocks_omitted": _summarise(grouped[cut:])}
    return {k: report[k] for k in ("schema", "op_type", "kernel", "block_dim", "call") if k in report} | {
        "status": "report_too_large", "blocks": [], "violations": [],
        "error": (f"the emulator's report of this call is {size(report)} bytes of JSON without its per-block part "
                  f"beyond what fits, over its limit of {budget} bytes (all reports of one forward share "
                  f"{MAX_REPLY_REPORTS_BYTES} bytes): too many distinct rule violations or kernel printf output")}


def budget_for(used: int, kept: int, max_reports: int) -> int:
    """The budget of the next report of a reply, when ``kept`` reports of ``used`` bytes came before it: whatever
    is left, less the minimum every later report is guaranteed."""
    later = max(0, max_reports - kept - 1)
    return max(MIN_REPORT_BYTES, MAX_REPLY_REPORTS_BYTES - used - later * MIN_REPORT_BYTES)


def expand(reports: list[Any]) -> list[Any]:
    """The reports of one reply with their repeated units written out (ValueError: a malformed repeat, or more
    than MAX_EXPANDED blocks in all)."""
    total = 0
    out = []
    for r in reports:
        blocks = r.get("blocks") if isinstance(r, dict) else None
        if not isinstance(blocks, list) or not any(isinstance(b, dict) and "repeat" in b for b in blocks):
            total += len(blocks) if isinstance(blocks, list) else 0
            out.append(r)
            continue
        full: list[Any] = []
        for unit in _units(blocks):
            reps = {b.get("repeat", 1) if isinstance(b, dict) else 1 for b in unit}
            n = reps.pop()
            if reps or not isinstance(n, int) or n < 1:
                raise ValueError("an emulator report's unit repeats unevenly")
            if not all(isinstance(b, dict) and isinstance(b.get("block"), int) for b in unit) and n > 1:
                raise ValueError("a repeated block has no index")
            total += n * len(unit)
            if total > MAX_EXPANDED:
                raise ValueError(f"the emulator reports of one forward describe more than {MAX_EXPANDED} blocks")
            for i in range(n):
                for b in unit:
                    if not isinstance(b, dict) or "repeat" not in b:
                        full.append(b)
                        continue
                    e = {k: v for k, v in b.items() if k != "repeat"}
                    e["block"] = b["block"] + i * len(unit)
                    if "ai_core" in b:
                        e["ai_core"] = b["ai_core"] + i
                    full.append(e)
        out.append({**r, "blocks": full})
    return out


def omitted_units(report: dict[str, Any]) -> list[float]:
    """The critical-path cycles the latency model dispatches for the blocks a report summarised: units of their
    mean length and the longest one last (list scheduling then ends no earlier than with their true lengths in
    the worst order, up to the mean: an over-estimate, never a gain)."""
    s = report.get("blocks_omitted")
    if not isinstance(s, dict) or not s.get("units"):
        return []
    n, total, top = int(s["units"]), float(s["cycles_sum"]), float(s["cycles_max"])
    if n == 1:
        return [top]
    return [max(0.0, (total - top) / (n - 1))] * (n - 1) + [top]
