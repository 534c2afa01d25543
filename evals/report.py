"""The evaluation report (``evokernel.evals.report``): ``summary.json``, ``report.md`` and figures.

:func:`build_report` reads either an **eval directory** written by the evaluation harness or a
single **run directory** of ``evokernel run``, and writes into ``out`` (default: the same folder)::

    OUT/summary.json     every number of the report, JSON-ready (None where undefined, never NaN)
    OUT/report.md        the human-readable report, figures embedded by relative links
    OUT/figures/*.png    tiers, cumulative_success, trajectories, q_values, comparison (>= 2 groups)

Layout read (this module only reads; the harness writes)
--------------------------------------------------------
An eval directory::

    EVAL_DIR/eval.json                                       name, command, config, tasks, stages,
                                                             groups, arms, conditions
    EVAL_DIR/arms/<group>/seed-<s>/runs/<unit>/attempts.jsonl  one or more run dirs per arm (union)
    EVAL_DIR/arms/<group>/seed-<s>/memory/**/values.jsonl      value ledger(s), optional (shared memory,
                                                             or one per stage / per task)
    EVAL_DIR/arms/<group>/seed-<s>/runs/<unit>/memory/**/values.jsonl   a baseline's private memory

``eval.json["tasks"]`` is the benchmark's operator list in stream order (``id``, ``category``,
``stage`` or ``suite``); ``stages`` the stages (suites) in stream order; ``groups`` the compared settings (the first group
is the *reference* of the paired differences); ``arms`` one (group, seed, dir) per run of a group.
A run directory (``run.json`` + ``attempts.jsonl``) is read as one group named after its method
with one seed, its ``settings.tasks`` as the operator list, no categories (the suite prefix of the
task id is then the category, as :mod:`metrics` does) and conditions reconstructed from
``run.json`` (what it does not hold is "not recorded").

Aggregation rules
-----------------
* Every metric is :mod:`evokernel.evals.metrics`'s (nothing is redefined here): per arm (= group x
  seed), :func:`metrics.summarize_method` over the union of the arm's attempt logs, with the
  benchmark's task list, the task -> category map and the budget T. Listed operators without
  records count as failures.
* An arm with no attempt on record (not started, or its folder is absent) is *missing*: it is
  listed as such and left out of the means (counting it would score an unstarted run as 0%
  correct). An arm with fewer than ``n_tasks x T`` attempts is included with what it has; the report
  is then marked *partial* and lists each arm's attempts against the expected number.
* A group's metric is the mean over its seeds on record (:func:`metrics.mean_and_spread`, seeds
  where the metric is undefined are dropped); ``spread`` holds n, mean, sample std, min and max.
  The IQR is the pair of per-seed quartile means; fast_p and per-category values are means per key;
  the cumulative-success curve is the element-wise mean. Tokens, cost and wall time are sums over
  seeds.
* ``per_stage``: the same metrics over each stage's (suite's) operators only, e.g. L1 then L2 for
  the transfer study.
* ``paired``: each group against the reference group, per (seed, operator) pair over the seeds both
  have (:func:`metrics.paired_differences`, group minus reference) for: solved within T (1/0), the
  natural log of the best kernel's speedup vs eager, the log of the within-operator speedup (first /
  best), and the 1-based attempt of the first feasible kernel.
* Figures pool the seeds of a group (task keys made unique per seed) or use the mean curves; see
  :func:`make_figures`.

The directories are read by :mod:`.report_data`, the markdown is written by :mod:`.report_markdown`.
"""
from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from . import metrics as M
from . import plots as P
from .report_data import (COUNTS, FIGURES, LEDGER, MODELLED_BACKENDS, N_TRAJECTORIES, PAIRED_METRICS, REPORT, RESOURCES,
                          SCALARS, SUMMARY, Arm, EvalData, ReportError, load)
from .report_markdown import render_markdown


# ---------------------------------------------------------------- aggregation


def _mean(values: Iterable[Any]) -> float | None:
    return M.mean_and_spread(values)["mean"]


def _pkeys(summaries: Sequence[Mapping[str, Any]]) -> list[str]:
    keys = [k for s in summaries for k in (s.get("fast_p") or {})]
    return list(dict.fromkeys(keys)) or list(M.fast_p([], []))


def mean_over_seeds(summaries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The mean over seeds of :data:`SCALARS`, :data:`COUNTS`, the IQR ends and the fast_p entries
    of per-seed metric dicts (:func:`metrics.summarize_method` or one of its ``per_category``
    entries); None where a metric is undefined in every seed."""
    out: dict[str, Any] = {k: _mean(s.get(k) for s in summaries) for k in SCALARS}
    iqrs = [s.get("iqr_speedup_vs_first") or [None, None] for s in summaries]
    out["iqr_speedup_vs_first"] = [_mean(q[0] for q in iqrs), _mean(q[1] for q in iqrs)]
    for k in COUNTS:
        if any(k in s for s in summaries):
            out[k] = _mean(s.get(k) for s in summaries)
    out["fast_p"] = {p: _mean((s.get("fast_p") or {}).get(p) for s in summaries) for p in _pkeys(summaries)}
    return out


def mean_curve(curves: Sequence[Sequence[float | None]]) -> list[float | None]:
    """Element-wise mean of curves (shorter ones padded with None); None where no curve has a value."""
    n = max((len(c) for c in curves), default=0)
    return [_mean(c[k] if k < len(c) else None for c in curves) for k in range(n)]


def spread(summaries: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """:func:`metrics.mean_and_spread` over seeds of every scalar metric, fast_p entries as
    ``"fast_p@<p>"``, and the per-seed resources."""
    out = {k: M.mean_and_spread(s.get(k) for s in summaries) for k in SCALARS}
    for p in _pkeys(summaries):
        out[f"fast_p@{p}"] = M.mean_and_spread((s.get("fast_p") or {}).get(p) for s in summaries)
    for k in RESOURCES:
        out[k] = M.mean_and_spread(s.get(k) for s in summaries)
    return out


def _sum(values: Iterable[Any]) -> float | int | None:
    xs = [v for v in values if v is not None]
    return sum(xs) if xs else None


def paired_values(records: Iterable[Mapping[str, Any]], tasks: Sequence[str], budget: int) -> dict[str, dict[str, Any]]:
    """Per operator of ``tasks``, within the first ``budget`` attempts: ``solved`` (1/0),
    ``log_speedup_vs_eager`` (ln of the best kernel's :func:`metrics.speedup_vs_eager`),
    ``log_speedup_vs_first`` (ln of :func:`metrics.speedup_vs_first`) and
    ``first_feasible_attempt`` (1-based); None where undefined (unsolved, untimed, < 2 timed kernels)."""
    listed = set(tasks)
    rs = [r for r in M.within_budget(records, budget) if r["task"] in listed]
    solved = M.solved_tasks(rs)
    eager = M.speedup_vs_eager(rs)
    first = M.speedup_vs_first(rs)
    first_ok: dict[str, int] = {}
    for r in rs:
        if r.get("feasible"):
            it = r.get("iteration", 0)
            first_ok[r["task"]] = min(it, first_ok.get(r["task"], it))
    return {
        "solved": {t: 1 if t in solved else 0 for t in tasks},
        "log_speedup_vs_eager": {t: math.log(eager[t]) if t in eager else None for t in tasks},
        "log_speedup_vs_first": {t: math.log(first[t]) if t in first else None for t in tasks},
        "first_feasible_attempt": {t: first_ok[t] + 1 if t in first_ok else None for t in tasks},
    }


def _group_summary(data: EvalData, group: Mapping[str, Any]) -> dict[str, Any]:
    """One ``methods`` entry: means over the group's seeds on record, spreads, per-seed summaries,
    per-stage means and the mean cumulative-success curve."""
    arms = data.arms_of(group["name"])
    per_seed = {str(a.seed): M.summarize_method(a.records, tasks=data.tasks, categories=data.categories,
                                                budget=data.budget) for a in arms}
    seeds = list(per_seed.values())
    out: dict[str, Any] = mean_over_seeds(seeds)
    cats = list(dict.fromkeys(c for s in seeds for c in s["per_category"]))
    out["per_category"] = {}
    for c in cats:
        rows = [s["per_category"][c] for s in seeds if c in s["per_category"]]
        row = mean_over_seeds(rows)
        row["n_tasks"] = rows[0]["n_tasks"]
        out["per_category"][c] = row
    for k in RESOURCES:
        out[k] = _sum(s.get(k) for s in seeds)
    out["spread"] = spread(seeds)
    out["per_seed"] = per_seed
    out["compile_baseline_failed"] = {t: why for s in seeds for t, why in (s.get("compile_baseline_failed") or {}).items()}
    out["per_stage"] = {}
    for stage in data.stages:
        stage_tasks = [t for t in data.tasks if data.stage_of.get(t) == stage]
        ss = [M.summarize_method(a.records, tasks=stage_tasks, categories=data.categories, budget=data.budget)
              for a in arms]
        row = mean_over_seeds(ss)
        row["n_tasks"] = len(stage_tasks)
        row["spread"] = {k: M.mean_and_spread(s.get(k) for s in ss) for k in SCALARS}
        row["cumulative_success"] = mean_curve([s["cumulative_success"] for s in ss])
        out["per_stage"][stage] = row
    out["cumulative_success"] = mean_curve([s["cumulative_success"] for s in seeds])
    listed = set(data.tasks)
    out["outcomes"] = outcomes([r for a in arms for r in M.within_budget(a.records, data.budget)
                                if r.get("task") in listed])
    out["seeds"] = [a.seed for a in arms]
    out["n_seeds"] = len(arms)
    out["missing_seeds"] = [a.seed for a in data.arms if a.group == group["name"] and not a.present]
    for k in ("method", "policy", "memory", "model"):
        out[k] = group.get(k)
    return out


OUTCOME_ORDER = ("feasible", "generate", "hack", "compile", "correctness", "runtime", "timeout", "verifier", "machine")


def outcomes(records: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Attempts by outcome: feasible, or the gate that failed (``generate``: no candidate in the reply)."""
    counts = {k: 0 for k in OUTCOME_ORDER}
    for r in records:
        key = "feasible" if r.get("feasible") else str(r.get("failed_gate") or "unknown")
        counts[key] = counts.get(key, 0) + 1
    return counts


def _paired(data: EvalData) -> dict[str, dict[str, Any]]:
    ref = data.reference
    if ref is None:
        return {}
    ref_arms = {a.seed: a for a in data.arms_of(ref)}
    out: dict[str, dict[str, Any]] = {}
    for g in data.groups[1:]:
        arms = {a.seed: a for a in data.arms_of(g["name"])}
        common = [s for s in arms if s in ref_arms]
        va: dict[str, dict[str, Any]] = {m: {} for m in PAIRED_METRICS}
        vb: dict[str, dict[str, Any]] = {m: {} for m in PAIRED_METRICS}
        for s in common:
            pa = paired_values(arms[s].records, data.tasks, data.budget)
            pb = paired_values(ref_arms[s].records, data.tasks, data.budget)
            for m in PAIRED_METRICS:
                va[m].update({f"{s}:{t}": v for t, v in pa[m].items()})
                vb[m].update({f"{s}:{t}": v for t, v in pb[m].items()})
        row: dict[str, Any] = {m: M.paired_differences(va[m], vb[m]) for m in PAIRED_METRICS}
        row["seeds"] = common
        out[f"{g['name']} vs {ref}"] = row
    return out


def _json_ready(x: Any) -> Any:
    """NaN / infinity -> None, tuples -> lists, paths -> str, recursively."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, Mapping):
        return {str(k): _json_ready(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_json_ready(v) for v in x]
    if isinstance(x, Path):
        return str(x)
    return x


def summarize(data: EvalData) -> dict[str, Any]:
    """The content of ``summary.json`` (see the module docstring for the aggregation rules)."""
    n_tasks = len(data.tasks)
    expected = n_tasks * data.budget
    progress = {}
    listed = set(data.tasks)
    for a in data.arms:  # attempts that count: listed operators, within the budget
        n = sum(1 for r in M.within_budget(a.records, data.budget) if r["task"] in listed)
        progress[a.key] = {"attempts": n, "expected": expected}
    missing = [a.key for a in data.arms if not a.present]
    complete = bool(data.arms) and all(p["attempts"] >= p["expected"] for p in progress.values()) and not missing
    summary = {
        "kind": data.kind,
        "name": data.name,
        "created": data.created,
        "command": data.command,
        "conditions": data.conditions,
        "budget": data.budget,
        "seeds": data.seeds,
        "n_tasks": n_tasks,
        "stages": data.stages,
        "reference": data.reference,
        "complete": complete,
        "progress": progress,
        "missing_arms": missing,
        "n_attempts": sum(p["attempts"] for p in progress.values()),
        "methods": {g["name"]: _group_summary(data, g) for g in data.groups},
        "paired": _paired(data),
        "config": data.config,
        "task_sizes": _task_sizes(data),
    }
    return _json_ready(summary)


def _task_sizes(data: EvalData) -> dict[str, Any] | None:
    """What the size fit did, per listed task (None: not recorded, e.g. runs from before --fit)."""
    if not data.sizes:
        return None
    keep = ("mode", "changed", "bytes", "est_ms", "fits", "note")
    return {t: {k: v for k, v in data.sizes[t].items() if k in keep}
            for t in data.tasks if isinstance(data.sizes.get(t), dict)}


# ---------------------------------------------------------------- figures


def _short(s: str, width: int) -> str:
    return s if len(s) <= width else s[: width - 1] + "\u2026"


def _seeds_text(n: int, prefix: str = "") -> str:
    return f"{prefix}{n} seed{'s' if n != 1 else ''}"


# backends whose latencies (and speedups) come from a latency model, not a clock
def subtitle(data: EvalData, seeds: str | None = None) -> str:
    """The conditions line of every figure: backend, generator/model, T, seeds (default: the eval's
    seed count), operators."""
    backend = data.config.get("backend") or data.conditions.get("backend") or "backend ?"
    models = [str(g["model"]) for g in data.groups if g.get("model")]
    gen = ", ".join(dict.fromkeys(models)) or ", ".join(data.config.get("generators") or []) \
        or str(data.config.get("generator") or "generator ?")
    seeds = seeds or _seeds_text(len(data.seeds))
    if backend in MODELLED_BACKENDS:
        backend += " (latency: modelled estimate)"
    return f"{backend} · {_short(gen, 40)} · T={data.budget} · {seeds} · {len(data.tasks)} operators"


def _pooled(data: EvalData) -> tuple[dict[str, list[dict[str, Any]]], list[str], dict[str, str] | None, list[int]]:
    """Records of each group with data, pooled over seeds with task keys ``s<seed>|<task>``; the
    seeds are those every such group has (their union if they share none)."""
    groups = [g["name"] for g in data.groups if data.arms_of(g["name"])]
    per = [{a.seed for a in data.arms_of(g)} for g in groups]
    common = set.intersection(*per) if per else set()
    seeds = sorted(common or set().union(*per)) if per else []
    by_group: dict[str, list[dict[str, Any]]] = {}
    for g in groups:
        rs = []
        for a in data.arms_of(g):
            if a.seed in seeds:
                rs += [{**r, "task": f"s{a.seed}|{r['task']}"} for r in a.records]
        by_group[g] = rs
    tasks = [f"s{s}|{t}" for s in seeds for t in data.tasks]
    cats = None
    if data.categories is not None:
        cats = {f"s{s}|{t}": c for s in seeds for t, c in data.categories.items()}
    else:  # the suite prefix, which the pooled keys would otherwise hide
        cats = {f"s{s}|{t}": M.suite_of(t) for s in seeds for t in data.tasks}
    return by_group, tasks, cats, seeds


def _display(p: Path, root: Path) -> str:
    """``p`` relative to ``root`` when it lies inside it (reports move with their eval dir)."""
    try:
        return str(p.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(p)


def _trajectory_tasks(data: EvalData, arm: Arm) -> list[str]:
    chosen = [str(t) for t in data.config.get("trajectories") or []]
    if chosen:
        return chosen
    listed = set(data.tasks)
    rs = [r for r in M.within_budget(arm.records, data.budget) if r["task"] in listed]
    vf = M.speedup_vs_first(rs)
    order = {t: i for i, t in enumerate(data.tasks)}
    return sorted(vf, key=lambda t: (-vf[t], order.get(t, 0)))[:N_TRAJECTORIES]


def _ledger_entries(arm: Arm) -> tuple[Path | None, list[dict[str, Any]], str | None]:
    """The first value ledger of an arm and its entries (those of the arm's attempts, plus memory
    imports); a note when there is none or it cannot be read."""
    if not arm.ledgers:
        return None, [], f"no value ledger (memory/**/{LEDGER}) for {arm.key}"
    path = arm.ledgers[0]
    try:
        entries = M.load_attempts(path)
    except (OSError, ValueError) as e:
        return path, [], f"value ledger {path} unreadable: {e}"
    if arm.ledger_filter:
        mine = [e for e in entries if e.get("attempt_id") in arm.ledger_filter or e.get("stage") == "import"]
        if any(e.get("stage") != "import" for e in mine):
            entries = mine
    return path, entries, None


def make_figures(data: EvalData, summary: Mapping[str, Any], out: str | Path, dpi: int = P.DPI) -> dict[str, Any]:
    """Write ``figures/*.png`` under ``out`` with :mod:`evokernel.evals.plots`. Returns
    ``{"files": {name: relative path or None}, "notes": {name: why skipped / what it shows}}``."""
    fig_dir = Path(out) / FIGURES
    files: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    methods = summary["methods"]

    def rel(p: Path) -> str:
        return f"{FIGURES}/{p.name}"

    # tiers: one bar group per group, seeds pooled
    by_group, tasks, cats, seeds = _pooled(data)
    sub = subtitle(data, _seeds_text(len(seeds), "pooled over "))
    files["tiers"] = rel(P.correctness_speedup_tiers(by_group, cats, tasks, fig_dir / "tiers.png", subtitle=sub,
                                                     budget=data.budget, dpi=dpi))
    notes["tiers"] = f"seeds pooled: {', '.join(map(str, seeds)) or 'none'}"

    # cumulative success: mean curve per group, or per group x stage
    curves: dict[str, list[float | None]] = {}
    for g, m in methods.items():
        if not m["n_seeds"]:
            continue
        if len(data.stages) > 1:
            for stage in data.stages:
                curves[f"{g} · {stage}"] = m["per_stage"][stage]["cumulative_success"]
        else:
            curves[g] = m["cumulative_success"]
    files["cumulative_success"] = rel(P.cumulative_success(
        curves, fig_dir / "cumulative_success.png", subtitle=subtitle(data, _seeds_text(len(data.seeds), "mean over ")),
        title="Cumulative success vs attempts (mean over seeds)", dpi=dpi))

    # trajectories and Q values: the reference group's first seed on record
    ref_arms = data.arms_of(data.reference) if data.reference else []
    arm = ref_arms[0] if ref_arms else None
    traj_tasks = _trajectory_tasks(data, arm) if arm else []
    where = f"{arm.group}, seed {arm.seed}" if arm else "no run"
    files["trajectories"] = rel(P.speedup_trajectories(
        arm.records if arm else [], traj_tasks, fig_dir / "trajectories.png",
        subtitle=f"{where} · {subtitle(data, 'one seed')}", ncols=2 if len(traj_tasks) == 4 else 3, dpi=dpi))
    if arm is None:
        notes["trajectories"] = "no data: the reference group has no run on record"
    elif traj_tasks:
        notes["trajectories"] = f"{where}; operators: {', '.join(traj_tasks)}"
    else:
        notes["trajectories"] = f"{where}; no data: no operator with two timed feasible kernels"
    # the baselines a user would pick instead: only where the run asked for the compile baseline
    if arm is not None and (M.speedup_vs_compile(arm.records) or M.compile_baseline_failures(arm.records)):
        files["baselines"] = rel(P.baselines(arm.records, fig_dir / "baselines.png",
                                             subtitle=f"{where} · {subtitle(data, 'one seed')}", dpi=dpi))
        notes["baselines"] = f"{where}; speedups of each operator's fastest correct kernel"
    if arm is None:
        files["q_values"] = None
        notes["q_values"] = "skipped: the reference group has no run on record"
    else:
        ledger, entries, why = _ledger_entries(arm)
        if why:
            files["q_values"] = None
            notes["q_values"] = f"skipped: {why}"
        else:
            files["q_values"] = rel(P.q_values(entries, fig_dir / "q_values.png",
                                               subtitle=f"{where} · ledger {ledger.name} · {subtitle(data, 'one seed')}",
                                               dpi=dpi))
            notes["q_values"] = f"{where}; ledger {_display(ledger, data.path)}"

    # comparison across groups
    if len(data.groups) >= 2:
        values = {g: {"Acc": m["spread"]["correctness"], "CR": m["spread"]["compile_rate"],
                      "geomean speedup vs eager": m["spread"]["geomean_speedup_vs_eager"],
                      "first kernel vs eager": m["spread"]["geomean_first_speedup_vs_eager"],
                      "median speedup vs first": m["spread"]["median_speedup_vs_first"]}
                  for g, m in methods.items()}
        files["comparison"] = rel(P.ablation_bars(values, fig_dir / "comparison.png", subtitle=subtitle(data),
                                                  title="Comparison across groups (mean over seeds)",
                                                  xlabel="group", dpi=dpi))
    return {"files": files, "notes": notes}

# ---------------------------------------------------------------- entry point


def build_report(path: str | Path, out: str | Path | None = None, *, figures: bool = True,
                 dpi: int = P.DPI) -> dict[str, Any]:
    """Read the eval directory or run directory at ``path`` and write ``summary.json``,
    ``report.md`` and (with ``figures``) ``figures/*.png`` into ``out`` (default: ``path``).
    Returns the summary dict (what ``summary.json`` holds). Raises :class:`ReportError` for a path
    that is neither kind of directory or whose metadata is unreadable."""
    data = load(path)
    out_dir = Path(out) if out is not None else data.path
    out_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(data)
    figs = make_figures(data, summary, out_dir, dpi=dpi) if figures else None
    summary["figures"] = _json_ready(figs or {"files": {}, "notes": {}})
    (out_dir / SUMMARY).write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    (out_dir / REPORT).write_text(render_markdown(summary, figs))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m evokernel.evals.report",
                                 description="Write summary.json, report.md and figures for an eval or run directory.")
    ap.add_argument("path", help="eval directory (eval.json) or run directory (run.json)")
    ap.add_argument("--out", help="output directory (default: PATH)")
    ap.add_argument("--no-figures", action="store_true", help="skip the PNG figures")
    args = ap.parse_args(argv)
    try:
        s = build_report(args.path, args.out, figures=not args.no_figures)
    except ReportError as e:
        print(f"error: {e}")
        return 2
    out = Path(args.out or args.path)
    print(f"{'complete' if s['complete'] else 'PARTIAL'}: {out / REPORT}, {out / SUMMARY}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
