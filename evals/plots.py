"""Report figures over a run's attempt log and the memory's value ledger (``evokernel.evals.plots``).

Every plotting function writes one PNG to ``out`` (parent folders are created) and returns its
path. Each figure carries a title, labelled axes and, when given, a ``subtitle`` line stating the
conditions (model, suite, budget, seeds, ...). Empty inputs give a figure that says "no data"
instead of raising.

The numbers each figure draws come from small pure helpers, exposed so they can be checked (and
reused in tables): :func:`tier_shares` / :func:`tier_counts`, :func:`curves_from_records` /
:func:`curve_points`, :func:`best_so_far` / :func:`attempt_points`, :func:`baseline_speedups`, :func:`q_series`,
:func:`ablation_table`. The metrics themselves (which kernel is best, what counts as solved, speedup
definitions) are those of :mod:`evokernel.evals.metrics`; nothing here redefines them.

Library code never touches pyplot's global state: figures are ``matplotlib.figure.Figure`` objects
rendered by the non-interactive Agg canvas, so this module is safe in headless runs and threads.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter, PercentFormatter

from . import metrics as M

Record = Mapping[str, Any]

DPI = 150
ALL = "all"  # the extra "every operator" group of the tier figure

# correctness / speedup-vs-eager tiers (paper Fig. 2, left), bottom of the stack first
NOT_CORRECT = "not correct"
UNTIMED = "correct, no speedup on record"
TIER_EDGES: tuple[float, ...] = (0.5, 0.8, 1.0)
SPEED_TIERS: tuple[str, ...] = ("correct, <0.5x", "correct, 0.5-0.8x", "correct, 0.8-1.0x", "correct, >=1.0x")
TIERS: tuple[str, ...] = (NOT_CORRECT, UNTIMED, *SPEED_TIERS)
_TIER_COLORS = {
    NOT_CORRECT: "#d9d9d9",
    UNTIMED: "#a6a6a6",
    SPEED_TIERS[0]: "#fdae61",
    SPEED_TIERS[1]: "#fee08b",
    SPEED_TIERS[2]: "#a6d96a",
    SPEED_TIERS[3]: "#1a9641",
}

METRICS = ("latency", "speedup_vs_first", "speedup_vs_eager")
_METRIC_LABELS = {
    "latency": "best-so-far latency (ms, log scale)",
    "speedup_vs_first": "best-so-far speedup vs first feasible (x, log scale)",
    "speedup_vs_eager": "best kernel's speedup vs eager (x, log scale)",
}


# ---------------------------------------------------------------- figure plumbing


def _figure(width: float, height: float) -> Figure:
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _titles(fig: Figure, title: str, subtitle: str | None) -> None:
    # one suptitle (title line, then the conditions line) so the layout engine reserves room for both
    fig.suptitle(title if not subtitle else f"{title}\n{subtitle}", fontsize=11)


def _save(fig: Figure, out: str | Path, dpi: int = DPI) -> Path:
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="png", dpi=dpi)
    return path


def _no_data(out: str | Path, title: str, subtitle: str | None, message: str = "no data",
             dpi: int = DPI) -> Path:
    fig = _figure(6.0, 3.5)
    _titles(fig, title, subtitle)
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=16, color="#666666",
            transform=ax.transAxes)
    return _save(fig, out, dpi)


def _item_label(item_id: str) -> str:
    """``trace:<run>:<suite>/<task>:<iteration>`` → ``trace <task> #<iteration>`` (the run id, which
    every item of a run shares, says nothing in a legend)."""
    parts = str(item_id).split(":")
    if len(parts) >= 4 and parts[0] in ("trace", "exp"):
        return f"{parts[0]} {parts[2].split('/')[-1]} #{parts[3]}"
    return str(item_id)


def _short(label: Any, width: int = 28) -> str:
    s = str(label)
    return s if len(s) <= width else s[: width - 1] + "\u2026"


def _plain_log_labels(ax: Any) -> None:
    """Plain numbers ("6", "0.5") on a log y axis instead of 6x10^0; minor ticks 2, 3 and 5 are
    labelled too while the axis spans less than about 1.5 decades (so short ranges get labels)."""
    def minor(v: float, _pos: Any) -> str:
        lo, hi = ax.get_ylim()
        if not (lo > 0 and hi > 0) or math.log10(hi / lo) > 1.5 or v <= 0:
            return ""
        lead = round(v / 10 ** math.floor(math.log10(v) + 1e-9), 6)
        return f"{v:g}" if lead in (2, 3, 5) else ""
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.yaxis.set_minor_formatter(FuncFormatter(minor))


def _nan(v: float | None) -> float:
    return float("nan") if v is None else float(v)


# ---------------------------------------------------------------- 1. correctness / speedup tiers


def speedup_tier(speedup: float | None) -> str:
    """The tier of a correct operator given its best kernel's speedup vs eager (None: none on
    record). Intervals are half-open: [0, 0.5), [0.5, 0.8), [0.8, 1.0), [1.0, inf)."""
    if speedup is None or not speedup > 0:
        return UNTIMED
    for edge, tier in zip(TIER_EDGES, SPEED_TIERS):
        if speedup < edge:
            return tier
    return SPEED_TIERS[-1]


def _category_map(order: Sequence[str], categories: Mapping[str, str] | None) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for t in order:
        c = categories.get(t, M.UNCATEGORIZED) if categories is not None else M.suite_of(t)
        groups.setdefault(c, []).append(t)
    return groups


def _union_order(records_by_method: Mapping[str, Iterable[Record]], tasks: Iterable[str] | None) -> list[str]:
    if tasks is not None:
        return M.task_order([], tasks)
    order: list[str] = []
    for rs in records_by_method.values():
        order += M.task_order(rs)
    return list(dict.fromkeys(order))


def tier_counts(records: Iterable[Record], categories: Mapping[str, str] | None = None,
                tasks: Iterable[str] | None = None, budget: int | None = None,
                overall: bool = True) -> dict[str, dict[str, int]]:
    """For one method: per category, how many operators fall in each of :data:`TIERS`, plus
    ``"n"`` (operators in the category). An operator is correct if it has a feasible kernel within
    the budget (:func:`metrics.best_kernels`); its tier is that best kernel's speedup vs eager
    (:func:`metrics.speedup_vs_eager`). Listed tasks without records are "not correct".
    ``categories`` as in :func:`metrics.per_category` (None: the suite prefix). With ``overall``
    and more than one category, an extra :data:`ALL` group covers every operator."""
    records = M.within_budget(records, budget)
    order = M.task_order(records, tasks)
    best = M.best_kernels(records)
    eager = M.speedup_vs_eager(records)
    groups = _category_map(order, categories)
    if overall and len(groups) > 1:
        groups[ALL] = list(order)
    out: dict[str, dict[str, int]] = {}
    for c, ts in groups.items():
        row = dict.fromkeys(TIERS, 0)
        for t in ts:
            row[speedup_tier(eager.get(t)) if t in best else NOT_CORRECT] += 1
        row["n"] = len(ts)
        out[c] = row
    return out


def tier_shares(records_by_method: Mapping[str, Iterable[Record]], categories: Mapping[str, str] | None = None,
                tasks: Iterable[str] | None = None, budget: int | None = None,
                overall: bool = True) -> dict[str, dict[str, dict[str, float]]]:
    """What :func:`correctness_speedup_tiers` draws: ``{category: {method: {tier: share}}}``, the
    shares of the category's operators in each of :data:`TIERS` (they sum to 1). Without ``tasks``
    the operators are the union of the methods' tasks, so every method is judged on the same set.
    Categories with no operators are absent."""
    order = _union_order(records_by_method, tasks)
    out: dict[str, dict[str, dict[str, float]]] = {}
    for method, rs in records_by_method.items():
        for c, row in tier_counts(rs, categories, order, budget, overall).items():
            n = row["n"]
            if n:
                out.setdefault(c, {})[method] = {t: row[t] / n for t in TIERS}
    return out


def correctness_speedup_tiers(records_by_method: Mapping[str, Iterable[Record]],
                              categories: Mapping[str, str] | None, tasks: Iterable[str] | None,
                              out: str | Path, *, subtitle: str | None = None, budget: int | None = None,
                              overall: bool = True,
                              title: str = "Correctness and speedup vs eager, by category",
                              dpi: int = DPI) -> Path:
    """Paper Fig. 2 (left): per category, one stacked bar per method of the share of operators that
    are not correct / correct with speedup vs eager in [0, 0.5), [0.5, 0.8), [0.8, 1.0), >= 1.0 (and
    correct with no speedup on record, drawn only if some operator is). Data: :func:`tier_shares`."""
    records_by_method = {m: list(rs) for m, rs in records_by_method.items()}
    order = _union_order(records_by_method, tasks)
    shares = tier_shares(records_by_method, categories, order, budget, overall)
    methods = list(records_by_method)
    if not shares or not methods:
        return _no_data(out, title, subtitle, dpi=dpi)
    sizes = {c: len(ts) for c, ts in _category_map(order, categories).items()}
    sizes[ALL] = len(order)
    tiers = [t for t in TIERS
             if t != UNTIMED or any(v[UNTIMED] > 0 for per in shares.values() for v in per.values())]

    cats = list(shares)
    width = 0.8 / len(methods)
    fig = _figure(max(6.0, 1.1 + len(cats) * (0.45 + 0.55 * len(methods))), 5.2)
    _titles(fig, title, subtitle)
    ax = fig.add_subplot()
    xs, xlabels = [], []
    for ci, c in enumerate(cats):
        for mi, m in enumerate(methods):
            x = ci + (mi - (len(methods) - 1) / 2) * width
            xs.append(x)
            xlabels.append(_short(m, 22))
            v = shares[c].get(m)
            if v is None:
                continue
            bottom = 0.0
            for t in tiers:
                h = v[t]
                ax.bar(x, h, width * 0.92, bottom=bottom, color=_TIER_COLORS[t], edgecolor="white",
                       linewidth=0.5, label=t if (ci, mi) == (0, 0) else None)
                if h >= 0.08:
                    ax.text(x, bottom + h / 2, f"{h:.0%}", ha="center", va="center", fontsize=7)
                bottom += h
    ax.set_xticks(xs, xlabels, rotation=90 if len(methods) > 2 else 0, fontsize=8)
    for ci, c in enumerate(cats):  # category names (and sizes) above their group of bars
        ax.text(ci, 1.01, f"{_short(c, 18)}\n(n={sizes.get(c, 0)})", ha="center", va="bottom", fontsize=9,
                fontweight="bold", transform=ax.get_xaxis_transform())
    for ci in range(1, len(cats)):
        ax.axvline(ci - 0.5, color="#bbbbbb", linewidth=0.8)
    ax.tick_params(axis="x", length=0)
    ax.set_xlim(-0.5, len(cats) - 0.5)
    ax.set_ylim(0, 1)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylabel("share of operators")
    ax.set_xlabel("method (grouped by category)")
    handles, labels = ax.get_legend_handles_labels()
    ax.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False, title="operator outcome", title_fontsize=8)
    return _save(fig, out, dpi)


# ---------------------------------------------------------------- 2. cumulative success


def curves_from_records(records_by_method: Mapping[str, Iterable[Record]], tasks: Iterable[str] | None = None,
                        budget: int | None = None) -> dict[str, list[float | None]]:
    """:func:`metrics.cumulative_success` per method, all over the same operators and budget
    (default: the union of tasks and the largest iteration on record across methods + 1)."""
    records_by_method = {m: list(rs) for m, rs in records_by_method.items()}
    order = _union_order(records_by_method, tasks)
    if budget is None:
        budget = max((r.get("iteration", 0) for rs in records_by_method.values() for r in rs), default=-1) + 1
    return {m: M.cumulative_success(rs, order, budget) for m, rs in records_by_method.items()}


def curve_points(curve: Sequence[float | None]) -> list[tuple[int, float]]:
    """(k, share solved within the first k attempts) for k = 1..len(curve), skipping undefined
    (None) entries: what one line of :func:`cumulative_success` draws."""
    return [(k, float(v)) for k, v in enumerate(curve, start=1) if v is not None]


def cumulative_success(curves: Mapping[str, Sequence[float | None]], out: str | Path, *,
                       subtitle: str | None = None, title: str = "Cumulative success vs attempts",
                       dpi: int = DPI) -> Path:
    """Paper Fig. 3 (left): share of operators solved within the first k attempts, one line per
    method or stream. ``curves`` maps a label to :func:`metrics.cumulative_success` output (see
    :func:`curves_from_records`)."""
    pts = {label: curve_points(c) for label, c in curves.items()}
    pts = {label: p for label, p in pts.items() if p}
    if not pts:
        return _no_data(out, title, subtitle, dpi=dpi)
    fig = _figure(6.4, 4.4)
    _titles(fig, title, subtitle)
    ax = fig.add_subplot()
    kmax = max(k for p in pts.values() for k, _ in p)
    for label, p in pts.items():
        ks, vs = zip(*p)
        ax.plot(ks, vs, marker="o" if kmax <= 30 else None, markersize=3.5, linewidth=1.8,
                label=f"{_short(label)} ({vs[-1]:.0%})")
    ax.set_xlim(0.5, kmax + 0.5)
    ax.set_ylim(0, 1.02)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_xlabel("attempts per operator k (iterations 0..k-1)")
    ax.set_ylabel("share of operators solved")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right", fontsize=8, title="final share in ()", title_fontsize=7)
    return _save(fig, out, dpi)


# ---------------------------------------------------------------- 3. speedup trajectories


def _task_records(records: Iterable[Record], task: str) -> list[Record]:
    rs = [r for r in records if r.get("task") == task]
    rs.sort(key=lambda r: r.get("iteration", 0))
    return rs


def _timed_latency(r: Record) -> float | None:
    lat = r.get("latency_ms")
    return float(lat) if r.get("feasible") and lat is not None and lat > 0 else None


def best_so_far(records: Iterable[Record], task: str, metric: str = "latency") -> list[tuple[int, float]]:
    """(iteration, value) at each iteration of ``task`` from its first timed feasible kernel on,
    where the value is computed by :mod:`metrics` over the attempts up to that iteration:

    * ``"latency"``: the best kernel's latency (ms), from :func:`metrics.best_kernels`;
    * ``"speedup_vs_first"``: :func:`metrics.speedup_vs_first` (1.0 while one timed kernel exists);
    * ``"speedup_vs_eager"``: the best kernel's :func:`metrics.speedup_vs_eager` (iterations where
      it has none on record are skipped)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    rs = _task_records(records, task)
    out: list[tuple[int, float]] = []
    seen_timed = False
    for it in dict.fromkeys(r.get("iteration", 0) for r in rs):
        prefix = [r for r in rs if r.get("iteration", 0) <= it]
        seen_timed = seen_timed or any(_timed_latency(r) is not None for r in prefix if r.get("iteration", 0) == it)
        if not seen_timed:
            continue
        if metric == "latency":
            out.append((it, float(M.best_kernels(prefix)[task]["latency_ms"])))
        elif metric == "speedup_vs_first":
            out.append((it, M.speedup_vs_first(prefix).get(task, 1.0)))
        else:
            s = M.speedup_vs_eager(prefix).get(task)
            if s is not None:
                out.append((it, s))
    return out


def attempt_points(records: Iterable[Record], task: str, metric: str = "latency") -> dict[str, Any]:
    """Per-attempt marks behind a trajectory: ``feasible`` as (iteration, value, stage) for each timed
    feasible attempt (its own latency; first timed latency / its latency; its own speedup vs eager),
    ``failed`` the iterations of attempts that were not feasible, and ``eager_ms`` (latency mode) the
    median over timed attempts of latency x speedup_vs_eager, i.e. the eager reference latency."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    rs = _task_records(records, task)
    timed = [(r, lat) for r in rs if (lat := _timed_latency(r)) is not None]
    first = timed[0][1] if timed else None
    pts: list[tuple[int, float, str]] = []
    for r, lat in timed:
        if metric == "latency":
            v: float | None = lat
        elif metric == "speedup_vs_first":
            v = first / lat
        else:
            s = r.get("speedup_vs_eager")
            v = float(s) if s is not None and s > 0 else None
        if v is not None:
            pts.append((r.get("iteration", 0), v, r.get("stage") or ""))
    eager = [lat * r["speedup_vs_eager"] for r, lat in timed
             if r.get("speedup_vs_eager") is not None and r["speedup_vs_eager"] > 0]
    return {
        "feasible": pts,
        "failed": [r.get("iteration", 0) for r in rs if not r.get("feasible")],
        "eager_ms": M.quantile(eager, 0.5) if metric == "latency" else None,
    }


def speedup_trajectories(records: Iterable[Record], tasks: Sequence[str], out: str | Path, *,
                         metric: str = "latency", subtitle: str | None = None, title: str | None = None,
                         ncols: int = 3, dpi: int = DPI) -> Path:
    """One panel per chosen task: the best-so-far value over iterations (step line, log y), each
    timed feasible attempt as a dot (circle: draft, triangle: refine), infeasible attempts as red
    ticks along the bottom, and the eager reference (latency: the implied eager latency; speedup vs
    eager: 1x). ``metric`` is one of :data:`METRICS`. Data: :func:`best_so_far`, :func:`attempt_points`."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
    title = title or ("Best-so-far latency per operator" if metric == "latency"
                      else f"Best-so-far {metric.replace('_', ' ')} per operator")
    records = list(records)
    tasks = list(dict.fromkeys(tasks))
    if not tasks or not any(r.get("task") in set(tasks) for r in records):
        return _no_data(out, title, subtitle, dpi=dpi)
    ncols = max(1, min(ncols, len(tasks)))
    nrows = math.ceil(len(tasks) / ncols)
    fig = _figure(3.6 * ncols + 0.6, 2.9 * nrows + 0.9)
    _titles(fig, title, subtitle)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, task in enumerate(tasks):
        ax = axes[i // ncols][i % ncols]
        ax.set_title(_short(task, 40), fontsize=9)
        ax.set_xlabel("iteration")
        if i % ncols == 0:
            ax.set_ylabel(_METRIC_LABELS[metric], fontsize=8)
        traj = best_so_far(records, task, metric)
        marks = attempt_points(records, task, metric)
        its = [r.get("iteration", 0) for r in _task_records(records, task)]
        if its:
            ax.set_xlim(min(its) - 0.5, max(its) + 0.5)
        for it in marks["failed"]:
            ax.plot(it, 0.03, marker="|", color="#d62728", markersize=9, transform=ax.get_xaxis_transform())
        if not traj:
            ax.text(0.5, 0.5, "no timed feasible kernel", ha="center", va="center", color="#666666",
                    transform=ax.transAxes, fontsize=9)
            continue
        ax.set_yscale("log")
        _plain_log_labels(ax)
        for stage, marker in (("draft", "o"), ("refine", "^")):
            p = [(x, y) for x, y, s in marks["feasible"] if (s == "draft") == (stage == "draft")]
            if p:
                ax.scatter(*zip(*p), marker=marker, s=16, color="#1f77b4", alpha=0.35, zorder=2,
                           label=f"{stage} attempt")
        xs, ys = zip(*traj)
        last_x = max(its)
        ax.step(list(xs) + [last_x], list(ys) + [ys[-1]], where="post", color="#1f77b4", linewidth=2,
                zorder=3, label="best so far")
        ref = marks["eager_ms"] if metric == "latency" else (1.0 if metric == "speedup_vs_eager" else None)
        if ref:
            ax.axhline(ref, color="#555555", linestyle="--", linewidth=1, label="eager")
        ax.annotate(f"{ys[-1]:.3g}", (last_x, ys[-1]), textcoords="offset points", xytext=(-2, 5),
                    ha="right", fontsize=8)
        ax.grid(alpha=0.3, which="both")
    for j in range(len(tasks), nrows * ncols):
        axes[j // ncols][j % ncols].set_axis_off()
    handles, labels = [], []
    for row in axes:
        for ax in row:
            h, lab = ax.get_legend_handles_labels()
            handles += h
            labels += lab
    if handles:
        uniq = dict(zip(labels, handles))
        if any(attempt_points(records, t, metric)["failed"] for t in tasks):
            uniq["infeasible attempt"] = Line2D([], [], marker="|", linestyle="", color="#d62728", markersize=9)
        fig.legend(list(uniq.values()), list(uniq), loc="outside lower center", ncols=len(uniq), fontsize=8,
                   frameon=False)
    return _save(fig, out, dpi)


# ---------------------------------------------------------------- 3b. the baselines users would pick instead


def baseline_speedups(records: Iterable[Record], tasks: Sequence[str] | None = None) -> dict[str, dict[str, float | None]]:
    """What :func:`baselines` draws: per operator with a correct kernel, its best kernel's speedup vs PyTorch
    eager (:func:`metrics.speedup_vs_eager`) and vs ``torch.compile`` of the reference
    (:func:`metrics.speedup_vs_compile`); None where that baseline has no number on record (e.g. compile failed)."""
    records = list(records)
    eager, compiled = M.speedup_vs_eager(records), M.speedup_vs_compile(records)
    order = M.task_order(records, tasks)
    return {t: {"eager": eager.get(t), "compile": compiled.get(t)} for t in order if t in eager or t in compiled}


def baselines(records: Iterable[Record], out: str | Path, *, tasks: Sequence[str] | None = None,
              subtitle: str | None = None, title: str = "Best kernel vs eager and vs torch.compile",
              dpi: int = DPI) -> Path:
    """One row per operator: two horizontal bars (log x), the best kernel's speedup vs eager and vs
    torch.compile, with the 1x line (right of it: faster than what a user would pick instead). Operators whose
    compile baseline failed show the eager bar only and are marked "compile failed". Data: :func:`baseline_speedups`."""
    records = list(records)
    rows = baseline_speedups(records, tasks)
    if not rows:
        return _no_data(out, title, subtitle, "no timed correct kernel", dpi=dpi)
    failed = M.compile_baseline_failures(records)
    names = list(rows)
    fig = _figure(7.5, max(3.0, 0.42 * len(names) + 1.6))
    _titles(fig, title, subtitle)
    ax = fig.add_subplot()
    h = 0.38
    for k, (key, colour, label) in enumerate((("eager", "#1f77b4", "vs eager"), ("compile", "#ff7f0e", "vs torch.compile"))):
        ys = [i + (k - 0.5) * h for i in range(len(names))]
        vals = [_nan(rows[t][key]) for t in names]
        # bars grow from 1x: to the right faster than the baseline, to the left slower
        ax.barh(ys, [v - 1.0 for v in vals], height=h, color=colour, label=label, left=1.0)
        for y, v in zip(ys, vals):
            if v == v:  # not NaN
                ax.annotate(f"{v:.2g}x", (v, y), textcoords="offset points", xytext=(3 if v >= 1 else -3, -3),
                            ha="left" if v >= 1 else "right", fontsize=7)
    for i, t in enumerate(names):
        if rows[t]["compile"] is None and t in failed:
            ax.annotate("compile failed", (1.0, i + 0.5 * h), textcoords="offset points", xytext=(3, -3),
                        fontsize=7, color="#888888")
    ax.set_xscale("log")
    known = [v for t in names for v in rows[t].values() if v]
    lo, hi = min(known + [1.0]), max(known + [1.0])
    ax.set_xlim(lo / 1.6, hi * 1.6)  # room for the labels at the bar ends
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    ax.xaxis.set_minor_formatter(FuncFormatter(lambda v, _pos: f"{v:g}" if round(v / 10 ** math.floor(math.log10(v)), 6) in (2, 3, 5) else ""))
    ax.axvline(1.0, color="#555555", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(names)), [_short(t, 36) for t in names], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("speedup of the best kernel (x, log scale; right of the dashed line: faster)")
    ax.grid(alpha=0.3, axis="x", which="both")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2, fontsize=8, frameon=False)
    return _save(fig, out, dpi)


# ---------------------------------------------------------------- 4. Q values


_STAGE_KEY = {"draft": "q1", "refine": "q2"}


def q_series(ledger_entries: Iterable[Mapping[str, Any]], stage: str, top: int | None = 10) -> dict[str, list[tuple[int, float]]]:
    """What one panel of :func:`q_values` draws: for the ``top`` items most often updated in
    ``stage`` ("draft": Q1, "refine": Q2), their Q after each change, as (ledger position, Q).

    Positions count every ledger entry (0-based, file order), so draft and refine panels share an
    axis. Reward updates (``updates[].q_after``) count toward "most often"; import entries
    (``stage == "import"``) that set this stage's value (``q1``/``q2``) add a point for items
    already selected but do not count. Ties go to the item first seen. ``top=None`` keeps all."""
    if stage not in _STAGE_KEY:
        raise ValueError(f"stage must be 'draft' or 'refine', got {stage!r}")
    key = _STAGE_KEY[stage]
    series: dict[str, list[tuple[int, float]]] = {}
    counts: dict[str, int] = {}
    for pos, e in enumerate(ledger_entries):
        if e.get("stage") == stage:
            for u in e.get("updates") or ():
                item = u.get("item")
                if item is None or u.get("q_after") is None:
                    continue
                series.setdefault(item, []).append((pos, float(u["q_after"])))
                counts[item] = counts.get(item, 0) + 1
        elif e.get("stage") == "import":
            for item, vals in (e.get("set") or {}).items():
                if isinstance(vals, Mapping) and vals.get(key) is not None:
                    series.setdefault(item, []).append((pos, float(vals[key])))
    ranked = sorted(counts, key=lambda it: -counts[it])  # stable: first-seen order breaks ties
    keep = ranked if top is None else ranked[: max(0, top)]
    return {item: series[item] for item in keep}


def q_values(ledger_entries: Iterable[Mapping[str, Any]], out: str | Path, top: int = 10, *,
             subtitle: str | None = None, title: str = "Memory item values over the ledger",
             dpi: int = DPI) -> Path:
    """Two panels, Q1 (draft) and Q2 (refine): for the ``top`` items updated most often in that
    stage, Q after each update against ledger position (step lines: Q holds between updates).
    ``ledger_entries`` are the parsed lines of ``values.jsonl`` (e.g. :func:`metrics.load_attempts`
    reads it). Data: :func:`q_series`."""
    entries = list(ledger_entries)
    panels = {stage: q_series(entries, stage, top) for stage in ("draft", "refine")}
    if not any(panels.values()):
        return _no_data(out, title, subtitle, dpi=dpi)
    fig = _figure(12.0, 4.8)
    _titles(fig, title, subtitle)
    axes = fig.subplots(1, 2, sharex=True)
    last = len(entries) - 1
    for ax, (stage, series) in zip(axes, panels.items()):
        name = "Q1 (draft)" if stage == "draft" else "Q2 (refine, normalised reward)"
        ax.set_title(f"{name}: top {len(series)} items by updates", fontsize=10)
        ax.set_xlabel("ledger position (entry index)")
        ax.set_ylabel(name)
        ax.axhline(0.0, color="#888888", linewidth=0.8)
        ax.grid(alpha=0.3)
        if not series:
            ax.text(0.5, 0.5, "no updates", ha="center", va="center", color="#666666", transform=ax.transAxes)
            continue
        for item, pts in series.items():
            xs, ys = zip(*pts)
            n = sum(1 for e in entries if e.get("stage") == stage
                    for u in e.get("updates") or () if u.get("item") == item)
            ax.step(list(xs) + [last], list(ys) + [ys[-1]], where="post", linewidth=1.4,
                    label=f"{_short(_item_label(item), 30)} (n={n})")
            ax.plot(xs, ys, linestyle="", marker=".", markersize=3, color=ax.lines[-1].get_color())
        if stage == "draft":
            ax.set_ylim(-1.05, 1.05)
        ax.legend(fontsize=7, loc="best", frameon=True, framealpha=0.8)
    return _save(fig, out, dpi)


# ---------------------------------------------------------------- 5. ablations


def _mean_std(v: Any) -> tuple[float | None, float | None]:
    if v is None:
        return None, None
    if isinstance(v, Mapping):  # e.g. metrics.mean_and_spread output
        return v.get("mean"), v.get("std")
    if isinstance(v, (tuple, list)):
        if not v:
            return None, None
        return v[0], (v[1] if len(v) > 1 else None)
    return float(v), None


def ablation_table(values_by_policy: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """What :func:`ablation_bars` draws: ``metrics`` (in first-seen order), ``policies``, and
    ``mean`` / ``err`` as ``{metric: {policy: float | None}}``. Each value may be ``(mean, std or
    None)``, a bare mean, or a :func:`metrics.mean_and_spread` dict; a policy lacking a metric gets
    None."""
    policies = list(values_by_policy)
    metric_names = list(dict.fromkeys(m for per in values_by_policy.values() for m in per))
    mean: dict[str, dict[str, float | None]] = {}
    err: dict[str, dict[str, float | None]] = {}
    for m in metric_names:
        mean[m], err[m] = {}, {}
        for p in policies:
            mu, sd = _mean_std(values_by_policy[p].get(m))
            mean[m][p] = None if mu is None else float(mu)
            err[m][p] = None if sd is None else float(sd)
    return {"metrics": metric_names, "policies": policies, "mean": mean, "err": err}


def ablation_bars(values_by_policy: Mapping[str, Mapping[str, Any]], out: str | Path, *,
                  subtitle: str | None = None, title: str = "Ablation: retrieval policy",
                  error_label: str = "\u00b1 1 sd across seeds", xlabel: str = "policy", dpi: int = DPI) -> Path:
    """One panel per metric (each on its own scale), one bar per policy with its standard deviation
    as an error bar where known, the mean written on each bar. Data: :func:`ablation_table`."""
    table = ablation_table(values_by_policy)
    metric_names, policies = table["metrics"], table["policies"]
    if not metric_names or not any(v is not None for per in table["mean"].values() for v in per.values()):
        return _no_data(out, title, subtitle, dpi=dpi)
    fig = _figure(max(4.5, 0.6 + len(metric_names) * (1.0 + 0.55 * len(policies))), 4.4)
    _titles(fig, title, subtitle)
    axes = fig.subplots(1, len(metric_names), squeeze=False)[0]
    palette = [f"C{i % 10}" for i in range(len(policies))]
    any_err = False
    for ax, m in zip(axes, metric_names):
        xs = list(range(len(policies)))
        means = [_nan(table["mean"][m][p]) for p in policies]
        errs = [_nan(table["err"][m][p]) for p in policies]  # NaN: no error bar drawn
        any_err = any_err or any(e > 0 for e in errs)
        ax.bar(xs, means, 0.7, yerr=errs, capsize=4, color=palette, error_kw={"elinewidth": 1})
        for x, mu, e in zip(xs, means, errs):
            if math.isnan(mu):
                ax.text(x, 0, "n/a", ha="center", va="bottom", fontsize=8, color="#666666")
            else:
                e = 0.0 if math.isnan(e) else e
                ax.annotate(f"{mu:.3g}", (x, mu + e if mu >= 0 else mu - e), textcoords="offset points",
                            xytext=(0, 3 if mu >= 0 else -10), ha="center", fontsize=8)
        ax.set_xticks(xs, [_short(p, 14) for p in policies], rotation=30 if len(policies) > 3 else 0,
                      fontsize=8)
        ax.set_title(_short(m.replace("_", " "), 36), fontsize=10)
        ax.set_ylabel(m.replace("_", " "), fontsize=8)
        ax.set_xlabel(xlabel, fontsize=8)
        ax.axhline(0, color="#888888", linewidth=0.8)
        ax.margins(y=0.15)
        ax.grid(axis="y", alpha=0.3)
    if any_err:
        fig.supxlabel(f"error bars: {error_label}", fontsize=8, color="#555555")
    return _save(fig, out, dpi)
