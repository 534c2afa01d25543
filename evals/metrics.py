"""Paper metrics over a run's attempt log (``attempts.jsonl``).

Pure functions over attempt records (lists of dicts, one per attempt, as ``nodes/update.py`` logs
them) and optional task -> category maps. The only I/O is :func:`load_attempts`.

Definitions (docs/metrics.md explains each and how it relates to the paper and KernelBench):

* CR  (:func:`compile_rate`): attempts with ``compiled`` true / all attempts. An attempt whose
  generation failed (``failed_gate == "generate"``: no code in the reply, an API error) counts as a
  generated kernel that did not compile; so does a kernel the static anti-hack check rejected
  before building it.
* Acc (:func:`correctness`): share of the benchmark's operators with a feasible kernel within the
  first ``budget`` attempts (``iteration < budget``); operators with no records count as failures.
* Round 1 (:func:`round1`): CR and Acc over ``iteration == 0`` only.
* Within-operator speedup (:func:`speedup_vs_first`): first timed feasible latency / best latency,
  for operators with at least two timed feasible kernels; median and IQR across operators.
* Speedup vs eager (:func:`speedup_vs_eager`): the best (lowest-latency) feasible kernel's own
  ``speedup_vs_eager``; aggregated by geometric mean.
* fast_p (:func:`fast_p`): share of ALL operators whose best kernel is correct and has
  ``speedup_vs_eager > p`` (strict, as KernelBench); fast_0 == Acc.

Quartiles use linear interpolation between order statistics (numpy's default ``"linear"`` method,
Hyndman & Fan type 7) everywhere: :func:`quantile`.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

Record = Mapping[str, Any]

QUARTILE_METHOD = "linear interpolation (numpy default, Hyndman-Fan type 7)"
DEFAULT_PS: tuple[float, ...] = (0, 0.8, 1, 1.5, 2)
UNCATEGORIZED = "uncategorized"


# ---------------------------------------------------------------- loading


def load_attempts(path: str | Path) -> list[dict[str, Any]]:
    """Read ``attempts.jsonl``. A torn last line (a crash mid-append) is skipped; a malformed line
    anywhere else raises ``ValueError``, since the log is the source of every reported number.
    Duplicate attempt ids keep the first record, as the run directory itself does."""
    lines = [ln for ln in Path(path).read_bytes().split(b"\n") if ln.strip()]
    out: list[dict[str, Any]] = []
    for i, raw in enumerate(lines):
        try:
            rec = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            if i == len(lines) - 1:
                break  # torn last line
            raise ValueError(f"{path}: line {i + 1} is not valid JSON: {e}") from e
        if not isinstance(rec, dict):
            raise ValueError(f"{path}: line {i + 1} is not a JSON object")  # noqa: TRY004 (bad data, not a bad argument)
        out.append(rec)
    return unique_attempts(out)


def unique_attempts(records: Iterable[Record]) -> list[Any]:
    """The records with repeated ``attempt_id`` dropped (the first one is kept, as the run directory
    does); records without an id are all kept."""
    seen: set[Any] = set()
    out = []
    for rec in records:
        aid = rec.get("attempt_id")
        if aid is not None:
            if aid in seen:
                continue
            seen.add(aid)
        out.append(rec)
    return out


# ---------------------------------------------------------------- small statistics


def quantile(values: Iterable[float], q: float) -> float | None:
    """The q-quantile (0 <= q <= 1) by linear interpolation between order statistics, as
    ``numpy.quantile(values, q)`` with its default method. None for no values."""
    xs = sorted(values)
    if not xs:
        return None
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must lie in [0, 1], got {q}")
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def median_iqr(values: Iterable[float]) -> dict[str, Any]:
    """n, median, q1, q3 (linear-interpolation quartiles); None statistics for no values."""
    xs = sorted(values)
    return {"n": len(xs), "median": quantile(xs, 0.5), "q1": quantile(xs, 0.25), "q3": quantile(xs, 0.75)}


def geomean(values: Iterable[float]) -> float | None:
    """Geometric mean of the positive values; None if there are none."""
    xs = [float(v) for v in values if v is not None and v > 0]
    if not xs:
        return None
    return math.exp(sum(math.log(v) for v in xs) / len(xs))


def _share(num: int, den: int) -> float | None:
    return num / den if den else None


def _pkey(p: float) -> str:
    return f"{p:g}"


# ---------------------------------------------------------------- record helpers


def task_order(records: Iterable[Record], tasks: Iterable[str] | None = None) -> list[str]:
    """The explicit task list if given, else the tasks of the records in order of first appearance."""
    if tasks is not None:
        return list(dict.fromkeys(tasks))
    return list(dict.fromkeys(r["task"] for r in records))


def within_budget(records: Iterable[Record], budget: int | None) -> list[Record]:
    """Records of the first ``budget`` attempts of each task (``iteration < budget``); all if None."""
    if budget is None:
        return list(records)
    return [r for r in records if r.get("iteration", 0) < budget]


def _by_task(records: Iterable[Record]) -> dict[str, list[Record]]:
    out: dict[str, list[Record]] = {}
    for r in records:
        out.setdefault(r["task"], []).append(r)
    for rs in out.values():  # stable: ties in iteration keep log order
        rs.sort(key=lambda r: r.get("iteration", 0))
    return out


def _timed(r: Record) -> bool:
    lat = r.get("latency_ms")
    return bool(r.get("feasible")) and lat is not None and lat > 0


def best_kernels(records: Iterable[Record]) -> dict[str, Record]:
    """Per task, the feasible record with the lowest latency (the earliest one on ties), as
    ``evokernel.runtime.run_dir.summarize_task`` picks it. Tasks whose feasible kernels were all untimed map to
    their first feasible record; tasks without a feasible kernel are absent."""
    out: dict[str, Record] = {}
    for task, rs in _by_task(records).items():
        timed = [r for r in rs if _timed(r)]
        if timed:
            out[task] = min(timed, key=lambda r: r["latency_ms"])
        else:
            feas = [r for r in rs if r.get("feasible")]
            if feas:
                out[task] = feas[0]
    return out


# ---------------------------------------------------------------- CR, Acc, round 1


def compile_rate(records: Iterable[Record], budget: int | None = None) -> float | None:
    """CR: attempts whose candidate built (``compiled`` true) / all attempts within the budget.
    Generation failures (``failed_gate == "generate"``) are generated-but-not-compiled attempts:
    they stay in the denominator; attempts the machine failed to judge (``machine``) do not. None when there
    are no attempts."""
    rs = [r for r in within_budget(records, budget) if r.get("failed_gate") != "machine"]
    return _share(sum(1 for r in rs if r.get("compiled")), len(rs))


def solved_tasks(records: Iterable[Record], budget: int | None = None) -> set[str]:
    """Tasks with at least one feasible attempt within the budget."""
    return {r["task"] for r in within_budget(records, budget) if r.get("feasible")}


def correctness(records: Iterable[Record], tasks: Iterable[str] | None = None,
                budget: int | None = None) -> float | None:
    """Acc: share of the operators in ``tasks`` (default: those in the records) with a feasible
    kernel among their first ``budget`` attempts. Listed tasks without records count as failures;
    records of unlisted tasks are ignored. None when there are no tasks."""
    records = list(records)
    order = task_order(records, tasks)
    solved = solved_tasks(records, budget)
    return _share(sum(1 for t in order if t in solved), len(order))


def round1(records: Iterable[Record], tasks: Iterable[str] | None = None) -> dict[str, float | None]:
    """The paper's "(Round 1)" numbers: CR and Acc over the first attempt (``iteration == 0``) of
    each operator."""
    records = list(records)
    order = task_order(records, tasks)
    first = [r for r in records if r.get("iteration", 0) == 0 and (tasks is None or r["task"] in order)]
    return {"compile_rate": compile_rate(first), "correctness": correctness(first, order)}


# ---------------------------------------------------------------- speedups


def speedup_vs_first(records: Iterable[Record]) -> dict[str, float]:
    """Per task: latency of the first timed feasible kernel / lowest feasible latency, for tasks with
    at least two timed feasible kernels (with one the ratio is 1 by construction, so the paper's
    within-operator statistic leaves such operators out). Values are >= 1."""
    out: dict[str, float] = {}
    for task, rs in _by_task(records).items():
        timed = [r for r in rs if _timed(r)]
        if len(timed) >= 2:
            out[task] = timed[0]["latency_ms"] / min(r["latency_ms"] for r in timed)
    return out


def _positive(chosen: Mapping[str, Record], key: str) -> dict[str, float]:
    """Per task, ``key`` of its chosen record where that is a positive number (tasks without one are absent)."""
    out: dict[str, float] = {}
    for task, r in chosen.items():
        s = r.get(key)
        if s is not None and s > 0:
            out[task] = float(s)
    return out


def speedup_vs_eager(records: Iterable[Record]) -> dict[str, float]:
    """Per task: the best kernel's own ``speedup_vs_eager`` (the verdict's median per-round ratio
    eager / candidate). Tasks without a feasible kernel, or whose best kernel has no positive
    speedup on record, are absent. Aggregate with :func:`geomean`."""
    return _positive(best_kernels(records), "speedup_vs_eager")


def first_speedup_vs_eager(records: Iterable[Record]) -> dict[str, float]:
    """Per task: the FIRST timed feasible kernel's own ``speedup_vs_eager`` (how good the kernel that
    drafting produced was, before refining). Read it next to :func:`speedup_vs_first`: a method whose
    first drafts are already fast has less left to gain within the operator. Geomean to aggregate."""
    first: dict[str, Record] = {}
    for task, rs in _by_task(records).items():
        timed = [r for r in rs if _timed(r)]
        if timed:
            first[task] = timed[0]
    return _positive(first, "speedup_vs_eager")


def speedup_vs_compile(records: Iterable[Record]) -> dict[str, float]:
    """Per task: the best kernel's ``speedup_vs_compile`` (median per-round ratio torch.compile of the
    reference / candidate, timed in the same rounds), present only for runs with the compile baseline
    enabled. The best kernel is still the fastest feasible one; aggregate with :func:`geomean`."""
    return _positive(best_kernels(records), "speedup_vs_compile")


def compile_baseline_failures(records: Iterable[Record]) -> dict[str, str]:
    """Per task where the compile baseline was asked for and torch.compile of the reference failed: why (the
    first reason on record). Those tasks have no ``speedup_vs_compile``; the report names them."""
    out: dict[str, str] = {}
    for r in records:
        if r.get("compile_error") and r["task"] not in out:
            out[r["task"]] = str(r["compile_error"])
    return out


def fast_p(records: Iterable[Record], tasks: Iterable[str] | None = None,
           ps: Sequence[float] = DEFAULT_PS, among_correct: bool = False) -> dict[str, float | None]:
    """KernelBench's fast_p: share of ALL operators whose best kernel is correct AND has
    ``speedup_vs_eager > p`` (strict). Keys are ``f"{p:g}"`` ("0", "0.8", "1", ...).

    A correct kernel with no speedup on record satisfies p <= 0 (a measured speedup is always
    positive) and no p > 0, so fast_0 equals :func:`correctness` exactly. Listed tasks without
    records count as failures. ``among_correct=True`` divides by the number of correct operators
    instead (our reading of the paper's Table 4 "Fast1 ratio")."""
    records = list(records)
    order = task_order(records, tasks)
    best = best_kernels(records)
    correct = [t for t in order if t in best]
    den = len(correct) if among_correct else len(order)
    out: dict[str, float | None] = {}
    for p in ps:
        n = 0
        for t in correct:
            s = best[t].get("speedup_vs_eager")
            if p < 0 or (p == 0 and (s is None or s > 0)) or (s is not None and s > p):
                n += 1
        out[_pkey(p)] = _share(n, den)
    return out


# ---------------------------------------------------------------- curves, resources


def cumulative_success(records: Iterable[Record], tasks: Iterable[str] | None = None,
                       budget: int | None = None) -> list[float | None]:
    """Element k-1 (k = 1..budget) is the share of ``tasks`` solved within their first k attempts.
    ``budget`` defaults to the largest iteration on record + 1."""
    records = list(records)
    order = task_order(records, tasks)
    if budget is None:
        budget = max((r.get("iteration", 0) for r in records), default=-1) + 1
    first_ok: dict[str, int] = {}
    for r in records:
        if r.get("feasible"):
            it = r.get("iteration", 0)
            first_ok[r["task"]] = min(it, first_ok.get(r["task"], it))
    return [_share(sum(1 for t in order if t in first_ok and first_ok[t] < k), len(order))
            for k in range(1, budget + 1)]


def _resources(rs: Sequence[Record]) -> dict[str, Any]:
    times = [r["time"] for r in rs if r.get("time") is not None]
    return {
        "attempts": len(rs),
        "tokens_in": sum(r.get("tokens_in") or 0 for r in rs),
        "tokens_out": sum(r.get("tokens_out") or 0 for r in rs),
        "cost_usd": sum(r.get("cost_usd") or 0.0 for r in rs),
        # span of the log timestamps (each written when its attempt ended): a lower bound on wall
        # time that leaves out the first attempt's own duration
        "wall_s": (max(times) - min(times)) if times else None,
    }


def tokens_cost_time(records: Iterable[Record]) -> dict[str, Any]:
    """Totals (attempts, tokens_in, tokens_out, cost_usd, wall_s) and the same per task under
    ``per_task``. wall_s is the span between the earliest and latest ``time`` stamps."""
    records = list(records)
    out = _resources(records)
    out["per_task"] = {t: _resources(rs) for t, rs in _by_task(records).items()}
    return out


# ---------------------------------------------------------------- grouping, summary


def suite_of(task: str) -> str:
    """The suite part of a task id ("cpu-l1/03_gelu" -> "cpu-l1"): the default category."""
    return task.split("/", 1)[0] if "/" in task else UNCATEGORIZED


def per_category(records: Iterable[Record], categories: Mapping[str, str] | None = None,
                 tasks: Iterable[str] | None = None, budget: int | None = None,
                 ps: Sequence[float] = DEFAULT_PS) -> dict[str, dict[str, Any]]:
    """The metrics grouped by category. ``categories`` maps task -> category (tasks missing from it
    go to "uncategorized"); without a map the suite prefix of the task id is the category."""
    records = within_budget(records, budget)
    order = task_order(records, tasks)
    listed = set(order)
    records = [r for r in records if r["task"] in listed]

    def cat(t: str) -> str:
        return categories.get(t, UNCATEGORIZED) if categories is not None else suite_of(t)

    groups: dict[str, list[str]] = {}
    for t in order:
        groups.setdefault(cat(t), []).append(t)
    out: dict[str, dict[str, Any]] = {}
    for c, ts in groups.items():
        members = set(ts)
        rs = [r for r in records if r["task"] in members]
        r1 = round1(rs, ts)
        vf = list(speedup_vs_first(rs).values())
        dist = median_iqr(vf)
        out[c] = {
            "n_tasks": len(ts),
            "attempts": len(rs),
            "compile_rate": compile_rate(rs),
            "correctness": correctness(rs, ts),
            "round1_compile_rate": r1["compile_rate"],
            "round1_correctness": r1["correctness"],
            "median_speedup_vs_first": dist["median"],
            "iqr_speedup_vs_first": [dist["q1"], dist["q3"]],
            "n_speedup_vs_first": dist["n"],
            "geomean_speedup_vs_eager": geomean(speedup_vs_eager(rs).values()),
            "fast_p": fast_p(rs, ts, ps),
        }
    return out


def summarize_method(records: Iterable[Record], tasks: Iterable[str] | None = None,
                     categories: Mapping[str, str] | None = None, budget: int | None = None,
                     ps: Sequence[float] = DEFAULT_PS) -> dict[str, Any]:
    """Every metric for one method's run, JSON-ready (None where undefined, never NaN).

    ``tasks`` is the benchmark's operator list (records of other tasks are ignored; listed tasks
    without records count as failures); ``budget`` keeps the first ``budget`` attempts per task."""
    records = list(records)
    order = task_order(records, tasks)
    listed = set(order)
    rs = [r for r in within_budget(records, budget) if r["task"] in listed]
    if budget is None:
        budget = max((r.get("iteration", 0) for r in rs), default=-1) + 1
    r1 = round1(rs, order)
    dist = median_iqr(speedup_vs_first(rs).values())
    eager = speedup_vs_eager(rs)
    compiled = speedup_vs_compile(rs)
    res = tokens_cost_time(rs)
    return {
        "n_tasks": len(order),
        "n_attempts": len(rs),
        "budget": budget,
        "compile_rate": compile_rate(rs),
        "correctness": correctness(rs, order),
        "round1_compile_rate": r1["compile_rate"],
        "round1_correctness": r1["correctness"],
        "median_speedup_vs_first": dist["median"],
        "iqr_speedup_vs_first": [dist["q1"], dist["q3"]],
        "n_speedup_vs_first": dist["n"],
        "geomean_speedup_vs_eager": geomean(eager.values()),
        "n_speedup_vs_eager": len(eager),
        "geomean_first_speedup_vs_eager": geomean(first_speedup_vs_eager(rs).values()),
        "geomean_speedup_vs_compile": geomean(compiled.values()),  # None unless the compile baseline ran
        "n_speedup_vs_compile": len(compiled),
        "compile_baseline_failed": compile_baseline_failures(rs),
        "fast_p": fast_p(rs, order, ps),
        "per_category": per_category(rs, categories, order, ps=ps),
        "cumulative_success": cumulative_success(rs, order, budget),
        "tokens_in": res["tokens_in"],
        "tokens_out": res["tokens_out"],
        "cost_usd": res["cost_usd"],
        "wall_s": res["wall_s"],
        "quartile_method": QUARTILE_METHOD,
    }


# ---------------------------------------------------------------- across seeds and methods


def mean_and_spread(values: Iterable[float | None]) -> dict[str, Any]:
    """n, mean, sample standard deviation (n - 1 denominator; None below 2 values), min, max.
    None values (a metric undefined in some seed) are dropped and not counted in n."""
    xs = [float(v) for v in values if v is not None]
    n = len(xs)
    if not n:
        return {"n": 0, "mean": None, "std": None, "min": None, "max": None}
    mean = sum(xs) / n
    std = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n >= 2 else None
    return {"n": n, "mean": mean, "std": std, "min": min(xs), "max": max(xs)}


def paired_differences(a: Mapping[str, float | None], b: Mapping[str, float | None],
                       tol: float = 0.0) -> dict[str, Any]:
    """Per-task a - b over the tasks where both have a value: n, mean and median difference, wins
    (a > b + tol), losses (a < b - tol), ties (|a - b| <= tol), and how many tasks only one side has.
    For speedups, pass logarithms to compare ratios."""
    common = [t for t in a if t in b and a[t] is not None and b[t] is not None]
    diffs = [float(a[t]) - float(b[t]) for t in common]
    return {
        "n": len(diffs),
        "mean_diff": (sum(diffs) / len(diffs)) if diffs else None,
        "median_diff": quantile(diffs, 0.5),
        "wins": sum(1 for d in diffs if d > tol),
        "losses": sum(1 for d in diffs if d < -tol),
        "ties": sum(1 for d in diffs if abs(d) <= tol),
        "only_a": sum(1 for t in a if a[t] is not None and (t not in b or b[t] is None)),
        "only_b": sum(1 for t in b if b[t] is not None and (t not in a or a[t] is None)),
    }
