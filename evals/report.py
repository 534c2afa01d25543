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
"""
from __future__ import annotations

import argparse
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import metrics as M
from . import plots as P

EVAL_JSON = "eval.json"
RUN_JSON = "run.json"
ATTEMPTS = "attempts.jsonl"
LEDGER = "values.jsonl"
SUMMARY = "summary.json"
REPORT = "report.md"
FIGURES = "figures"

#: scalar metrics of :func:`metrics.summarize_method` that are averaged over seeds
SCALARS: tuple[str, ...] = ("compile_rate", "correctness", "round1_compile_rate", "round1_correctness",
                            "median_speedup_vs_first", "geomean_speedup_vs_eager", "geomean_first_speedup_vs_eager",
                            "geomean_speedup_vs_compile")
#: counts that are averaged over seeds as well (how many operators a speedup statistic is over)
COUNTS: tuple[str, ...] = ("n_speedup_vs_first", "n_speedup_vs_eager")
#: resources summed over seeds
RESOURCES: tuple[str, ...] = ("tokens_in", "tokens_out", "cost_usd", "wall_s")
#: per-(seed, operator) values compared between groups
PAIRED_METRICS: tuple[str, ...] = ("solved", "log_speedup_vs_eager", "log_speedup_vs_first", "first_feasible_attempt")
NOT_RECORDED = "not recorded"
#: at most this many operators in the trajectory figure when the config names none
N_TRAJECTORIES = 4


class ReportError(ValueError):
    """The path is neither an eval directory nor a run directory, or its metadata is unreadable."""


# ---------------------------------------------------------------- loading


@dataclass
class Arm:
    """One run of a group with one seed: the union of its attempt logs and its value ledgers."""

    group: str
    seed: int
    dir: Path | None
    records: list[dict[str, Any]] = field(default_factory=list)
    ledgers: list[Path] = field(default_factory=list)
    #: value-ledger entries are kept only for these attempt ids (plus imports); None keeps all
    ledger_filter: set[str] | None = None

    @property
    def key(self) -> str:
        return f"{self.group}/seed-{self.seed}"

    @property
    def present(self) -> bool:
        return bool(self.records)


@dataclass
class EvalData:
    """Everything :func:`summarize` and the figures need, read from an eval or a run directory."""

    kind: str  # "eval" | "run"
    path: Path
    name: str
    created: str | None
    command: str | None
    config: dict[str, Any]
    tasks: list[str]
    categories: dict[str, str] | None  # None: metrics' default (suite prefix)
    stage_of: dict[str, str]
    stages: list[str]
    groups: list[dict[str, Any]]
    arms: list[Arm]
    conditions: dict[str, Any]
    budget: int
    seeds: list[int]
    #: task id -> what the size fit did (``Task.fit``: mode, changed constants, bytes, est_ms); None: not recorded
    sizes: dict[str, Any] | None = None

    @property
    def reference(self) -> str | None:
        return self.groups[0]["name"] if self.groups else None

    def arms_of(self, group: str) -> list[Arm]:
        """The group's arms with at least one attempt on record (missing arms are left out)."""
        return [a for a in self.arms if a.group == group and a.present]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except OSError as e:
        raise ReportError(f"{path}: cannot read it: {e}") from e
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReportError(f"{path}: not valid JSON: {e}") from e


def _load_records(files: Iterable[Path]) -> list[dict[str, Any]]:
    """The union of attempt logs: :func:`metrics.load_attempts` per file, attempt ids deduplicated
    across files (first kept), records without a task id dropped."""
    out: list[dict[str, Any]] = []
    for f in files:
        try:
            recs = M.load_attempts(f)
        except ValueError as e:  # a malformed line mid-file: every number would silently change
            raise ReportError(f"unreadable attempt log: {e}") from e
        out += [r for r in recs if isinstance(r.get("task"), str)]
    return M.unique_attempts(out)


def _ledgers_under(memory: Path) -> list[Path]:
    """``values.jsonl`` files under a memory folder, shallowest first (shared memory before
    per-task memories)."""
    if not memory.is_dir():
        return []
    return sorted(memory.glob(f"**/{LEDGER}"), key=lambda p: (len(p.parts), str(p)))


def _int(v: Any, what: str, where: Path) -> int:
    """``v`` as an int (an integer or a string of digits), else :class:`ReportError`."""
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            pass
    raise ReportError(f"{where}: {what} must be an integer, got {v!r}")


def load_eval_dir(path: str | Path) -> EvalData:
    """Read an eval directory (see the module docstring). Raises :class:`ReportError` when
    ``eval.json`` is unreadable or lacks what the report needs (a budget, the task and group lists)."""
    root = Path(path)
    ej = root / EVAL_JSON
    meta = _read_json(ej)
    if not isinstance(meta, dict):
        raise ReportError(f"{ej}: expected a JSON object, got {type(meta).__name__}")
    config = meta.get("config")
    if not isinstance(config, dict):
        raise ReportError(f"{ej}: 'config' (the resolved eval config) is missing or not an object")
    if "budget" not in config:
        raise ReportError(f"{ej}: config has no 'budget' (T, attempts per operator)")
    budget = _int(config["budget"], "config.budget", ej)
    if budget < 1:
        raise ReportError(f"{ej}: config.budget must be >= 1, got {budget}")

    raw_tasks = meta.get("tasks")
    if not isinstance(raw_tasks, list):
        raise ReportError(f"{ej}: 'tasks' (the benchmark's operator list) is missing or not a list")
    tasks: list[str] = []
    cats: dict[str, str] = {}
    stage_of: dict[str, str] = {}
    sizes: dict[str, Any] = {}
    for i, t in enumerate(raw_tasks):
        if isinstance(t, str):
            t = {"id": t}
        if not isinstance(t, dict) or not isinstance(t.get("id"), str):
            raise ReportError(f"{ej}: tasks[{i}] must be an object with a string 'id', got {t!r}")
        tid = t["id"]
        tasks.append(tid)
        if t.get("category"):
            cats[tid] = str(t["category"])
        if isinstance(t.get("fit"), dict):
            sizes[tid] = t["fit"]
        stage_of[tid] = str(t.get("stage") or t.get("suite") or M.suite_of(tid))
    tasks = list(dict.fromkeys(tasks))
    stages = [str(s) for s in meta.get("stages") or []]
    stages += [s for s in dict.fromkeys(stage_of.values()) if s not in stages]

    raw_groups = meta.get("groups")
    if not isinstance(raw_groups, list) or not raw_groups:
        raise ReportError(f"{ej}: 'groups' (the compared settings) is missing, empty or not a list")
    groups: list[dict[str, Any]] = []
    for i, g in enumerate(raw_groups):
        if not isinstance(g, dict) or not isinstance(g.get("name"), str) or not g["name"]:
            raise ReportError(f"{ej}: groups[{i}] must be an object with a non-empty string 'name', got {g!r}")
        groups.append(g)
    names = [g["name"] for g in groups]
    if len(set(names)) != len(names):
        raise ReportError(f"{ej}: group names must be unique, got {names}")

    seeds = [_int(s, "config.seeds[]", ej) for s in (config.get("seeds") or [])]
    raw_arms = meta.get("arms")
    if raw_arms is None:  # not written: every group x seed at its conventional place
        raw_arms = [{"group": g, "seed": s, "dir": f"arms/{g}/seed-{s}"} for g in names for s in seeds]
    if not isinstance(raw_arms, list):
        raise ReportError(f"{ej}: 'arms' must be a list, got {type(raw_arms).__name__}")
    arms: list[Arm] = []
    seen: set[tuple[str, int]] = set()
    for i, a in enumerate(raw_arms):
        if not isinstance(a, dict) or a.get("group") not in names or "seed" not in a:
            raise ReportError(f"{ej}: arms[{i}] must name a known group and a seed, got {a!r}")
        seed = _int(a["seed"], f"arms[{i}].seed", ej)
        if (a["group"], seed) in seen:
            continue
        seen.add((a["group"], seed))
        d = root / str(a.get("dir") or f"arms/{a['group']}/seed-{seed}")
        files = sorted((d / "runs").glob(f"**/{ATTEMPTS}")) if (d / "runs").is_dir() else []
        # the arm's memory; baselines keep a private memory inside each unit's run dir
        ledgers = _ledgers_under(d / "memory") + [p for f in files for p in _ledgers_under(f.parent / "memory")]
        arms.append(Arm(a["group"], seed, d, _load_records(files), ledgers))
    for a in arms:
        a.ledger_filter = {r["attempt_id"] for r in a.records if r.get("attempt_id") is not None}
    seeds = list(dict.fromkeys(seeds + [a.seed for a in arms]))

    conditions = meta.get("conditions")
    if conditions is None:
        conditions = {}
    if not isinstance(conditions, dict):
        raise ReportError(f"{ej}: 'conditions' must be an object, got {type(conditions).__name__}")
    command = meta.get("command")
    for added in meta.get("seeds_added") or []:  # an eval that gained seeds: how they came
        when = added.get("time", "") if isinstance(added, dict) else ""
        later = [i.get("command") for i in meta.get("invocations") or [] if isinstance(i, dict) and i.get("time", "") >= when]
        if command and later and later[0]:
            command += f"\n# then seed(s) {', '.join(map(str, added.get('seeds', [])))} added ({when}):\n{later[0]}"
    return EvalData(
        kind="eval", path=root, name=str(meta.get("name") or root.name), created=meta.get("created"),
        command=command, config=config, tasks=tasks, categories=cats or None,
        stage_of=stage_of, stages=stages, groups=groups, arms=arms, conditions=conditions,
        budget=budget, seeds=seeds, sizes=sizes or None)


def _run_memory(root: Path, ctx: Mapping[str, Any]) -> Path | None:
    """The memory folder a run used. Relative ``memory_dir`` / ``run_dir`` settings were relative to
    the working directory of ``evokernel run``; recover it from where the run dir lies now."""
    mem = ctx.get("memory_dir")
    if not mem:
        return None
    mem = Path(str(mem))
    if mem.is_absolute():
        return mem
    base = root.resolve().parent
    rd = Path(str(ctx.get("run_dir") or ""))
    if str(rd) not in ("", ".") and not rd.is_absolute():
        parts = root.resolve().parts
        if len(parts) > len(rd.parts) and tuple(parts[-len(rd.parts):]) == rd.parts:
            base = Path(*parts[: -len(rd.parts)])
    return base / mem


def _run_command(settings: Mapping[str, Any]) -> str:
    """``evokernel run`` with the options run.json recorded (a reconstruction, not a log)."""
    ctx = settings.get("context") or {}
    inputs = settings.get("inputs") or {}
    targets = inputs.get("tasks") or settings.get("tasks") or []
    parts = ["evokernel", "run", *map(str, targets)]
    gen = str(ctx.get("generator", "template"))
    opts: list[tuple[str, Any]] = [("--method", ctx.get("method")), ("--backend", ctx.get("backend")),
                                   ("--budget", ctx.get("budget")), ("--seed", ctx.get("seed")),
                                   ("--policy", ctx.get("policy")), ("--n-context", ctx.get("n_context")),
                                   ("--alpha", ctx.get("alpha"))]
    if gen != "template":
        opts += [("--generator", "llm"), ("--model", gen), ("--temperature", ctx.get("temperature"))]
    if inputs.get("limit"):
        opts.append(("--limit", inputs["limit"]))
    for k, v in (inputs.get("overrides") or {}).items():
        opts.append(("--set", f"{k}={v}"))
    if inputs.get("fit"):
        opts.append(("--fit", inputs["fit"]))
    if ctx.get("memory_dir"):
        opts.append(("--memory", ctx["memory_dir"]))
    if ctx.get("run_dir"):
        opts.append(("--run-dir", ctx["run_dir"]))
    for k, v in opts:
        if v is not None and v != "":
            parts += [k, str(v)]
    if ctx.get("strict"):
        parts.append("--strict")
    return " ".join(parts)


def load_run_dir(path: str | Path) -> EvalData:
    """Read one ``evokernel run`` directory as an eval with one group (its method) and one seed."""
    root = Path(path)
    meta = _read_json(root / RUN_JSON)
    if not isinstance(meta, dict):
        raise ReportError(f"{root / RUN_JSON}: expected a JSON object, got {type(meta).__name__}")
    settings = meta.get("settings") if isinstance(meta.get("settings"), dict) else {}
    ctx = settings.get("context") if isinstance(settings.get("context"), dict) else {}
    records = _load_records([root / ATTEMPTS] if (root / ATTEMPTS).exists() else [])
    tasks = [str(t) for t in settings.get("tasks") or []] or M.task_order(records)
    method = str(ctx.get("method") or "evokernel")  # the Context default; older run.json lacks the key
    seed = _int(ctx.get("seed", 0), "settings.context.seed", root / RUN_JSON)
    try:
        budget = int(ctx.get("budget") or 0)
    except (TypeError, ValueError):
        budget = 0
    if budget < 1:  # no budget recorded: the largest iteration on record + 1
        budget = max((r.get("iteration", 0) for r in records), default=0) + 1
    memory = _run_memory(root, ctx)
    ledgers = _ledgers_under(memory) if memory else []
    ledgers = [p for p in ledgers if p.parent == memory] or ledgers  # this run's shared ledger first
    arm = Arm(method, seed, root, records, ledgers,
              ledger_filter={r["attempt_id"] for r in records if r.get("attempt_id") is not None})
    stage_of = {t: M.suite_of(t) for t in tasks}
    strict = ctx.get("strict")
    conditions: dict[str, Any] = {
        "source": f"single run directory {root}; conditions reconstructed from run.json",
        "backend": str(ctx.get("backend", NOT_RECORDED)),
        "generator": str(ctx.get("generator", NOT_RECORDED)),
        "tolerance": (NOT_RECORDED if strict is None else
                      "strict: atol=rtol=1e-4" if strict else "atol=rtol=1e-2 (the paper's)"),
        "speedup_base": ("speedup_vs_eager: PyTorch eager timed in the same verdict as the kernel; "
                         "speedup_vs_first: the operator's first timed feasible kernel"),
        "aggregation": ("CR and Acc as shares; within-operator speedup: median and IQR (linear quartiles); "
                        "speedup vs eager: geometric mean; fast_p over all operators"),
        "timing": NOT_RECORDED,
        "hardware": NOT_RECORDED,
        "software": NOT_RECORDED,
    }
    config = {"budget": budget, "seeds": [seed], "methods": [method], "policies": [ctx.get("policy")],
              "backend": ctx.get("backend"), "generator": ctx.get("generator"), "strict": bool(strict),
              "tasks": tasks, "trajectories": [], "run_context": ctx}
    group = {"name": method, "method": method, "policy": ctx.get("policy"),
             "memory": "shared" if ctx.get("memory_dir") or ctx.get("memory_url") else None,
             "model": ctx.get("generator")}
    return EvalData(
        kind="run", path=root, name=str(meta.get("run_id") or root.name), created=meta.get("created"),
        command=_run_command(settings), config=config, tasks=tasks, stage_of=stage_of,
        categories={str(k): str(v) for k, v in settings["categories"].items()}
        if isinstance(settings.get("categories"), dict) and settings["categories"] else None,
        stages=list(dict.fromkeys(stage_of.values())), groups=[group], arms=[arm], conditions=conditions,
        budget=budget, seeds=[seed],
        sizes=settings.get("task_fit") if isinstance(settings.get("task_fit"), dict) else None)


def load(path: str | Path) -> EvalData:
    """An eval directory (has ``eval.json``) or a run directory (has ``run.json``)."""
    root = Path(path)
    if not root.exists():
        raise ReportError(f"{root}: no such directory")
    if not root.is_dir():
        raise ReportError(f"{root}: not a directory (expected an eval dir with {EVAL_JSON} "
                          f"or a run dir with {RUN_JSON})")
    if (root / EVAL_JSON).exists():
        return load_eval_dir(root)
    if (root / RUN_JSON).exists():
        return load_run_dir(root)
    raise ReportError(f"{root}: neither an eval directory (no {EVAL_JSON}) nor a run directory "
                      f"(no {RUN_JSON})")


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
MODELLED_BACKENDS = ("ascend-sim",)


def subtitle(data: EvalData, seeds: str | None = None) -> str:
    """The conditions line of every figure: backend, generator/model, T, seeds (default: the eval's
    seed count), operators."""
    backend = data.config.get("backend") or data.conditions.get("backend") or "backend ?"
    models = [str(g["model"]) for g in data.groups if g.get("model")]
    gen = ", ".join(dict.fromkeys(models)) or str(data.config.get("generator") or "generator ?")
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


# ---------------------------------------------------------------- markdown


def _esc(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def pct(v: float | None, digits: int = 1) -> str:
    return "—" if v is None else f"{100 * v:.{digits}f}%"


def times(v: float | None) -> str:
    return "—" if v is None else f"{v:.2f}×"


def _with_sd(sp: Mapping[str, Any] | None, kind: str, n_seeds: int) -> str:
    """``mean ± sd`` (percentage points for shares) when >= 2 seeds have a value, with ``(n=k)``
    when fewer seeds than the group has define the metric."""
    if not sp or sp.get("mean") is None:
        return "—"
    mu, sd, n = sp["mean"], sp.get("std"), sp.get("n", 0)
    s = pct(mu) if kind == "pct" else times(mu)
    if sd is not None:
        s += f" ± {100 * sd:.1f}" if kind == "pct" else f" ± {sd:.2f}"
    if n_seeds > 1 and n < n_seeds:
        s += f" (n={n})"
    return s


def count(v: float | None) -> str:
    if v is None:
        return "—"
    v = float(v)
    if abs(v) >= 1e6:
        return f"{v / 1e6:.2f}M"
    if abs(v) >= 1e4:
        return f"{v / 1e3:.1f}k"
    return f"{v:,.0f}"


def money(v: float | None) -> str:
    return "—" if v is None else f"${v:,.2f}"


def duration(v: float | None) -> str:
    if v is None:
        return "—"
    if v < 120:
        return f"{v:.0f} s"
    if v < 7200:
        return f"{v / 60:.1f} min"
    return f"{v / 3600:.1f} h"


def _table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(_esc(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_esc(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _condition_lines(conditions: Mapping[str, Any]) -> list[str]:
    if not conditions:
        return ["*No conditions recorded.*", ""]
    lines = []
    for k, v in conditions.items():
        if isinstance(v, Mapping):
            lines.append(f"- **{k}**:" + ("" if v else " —"))
            lines += [f"  - {sk}: {sv if isinstance(sv, str) else json.dumps(sv)}" for sk, sv in v.items()]
        else:
            lines.append(f"- **{k}**: {v if isinstance(v, str) else json.dumps(v)}")
    return lines + [""]


def _diff(metric: str, d: float | None) -> str:
    if d is None:
        return "—"
    if metric == "solved":
        return f"{100 * d:+.1f} pp"
    if metric.startswith("log_"):
        return f"{d:+.3f} (×{math.exp(d):.2f})"
    return f"{d:+.2f}"


_PAIRED_LABELS = {
    "solved": "solved within T (1/0)",
    "log_speedup_vs_eager": "ln speedup vs eager (best kernel)",
    "log_speedup_vs_first": "ln speedup vs first (within operator)",
    "first_feasible_attempt": "first feasible attempt (1-based)",
}


def _sizes_lines(sizes: Mapping[str, Any] | None) -> list[str]:
    """The "Task sizes" section: which operators ran at sizes other than their files' (``--fit auto``)."""
    if not sizes:
        return []
    modes = {str((f or {}).get("mode") or "?") for f in sizes.values()}
    changed = {t: f for t, f in sizes.items() if (f or {}).get("changed")}
    L = ["## Task sizes", ""]
    if modes == {"none"}:
        return L + ["Every operator ran at the sizes its file sets (`--fit none`).", ""]
    L += [(f"`--fit auto`: {len(changed)} of {len(sizes)} operators ran with size constants scaled down to fit "
           "the backend's memory and time budget (the rest fit as written); latencies and speedups are at these "
           "sizes."), ""]
    unfit = [t for t, f in sizes.items() if f and f.get("mode") == "auto" and not f.get("fits", True)]
    if unfit:
        L += [f"Operators still over the budget: {', '.join(unfit)}.", ""]
    if changed:
        def fmt(v: Any) -> str:
            return "(" + ", ".join(map(str, v)) + ")" if isinstance(v, (list, tuple)) else str(v)

        L += _table(["operator", "changed", "MiB", "est. ms"],
                    ([t, ", ".join(f"{k} {fmt(v[0])}→{fmt(v[1])}" for k, v in f["changed"].items()),
                      f"{(f.get('bytes') or 0) / (1 << 20):.1f}",
                      f"{f['est_ms']:.1f}" if isinstance(f.get("est_ms"), (int, float)) else "—"]
                     for t, f in changed.items()))
    return L


def render_markdown(summary: Mapping[str, Any], figures: Mapping[str, Any] | None = None) -> str:
    """``report.md`` from a :func:`summarize` result and the :func:`make_figures` result."""
    s = summary
    methods: Mapping[str, Any] = s["methods"]
    T, n_tasks = s["budget"], s["n_tasks"]
    L: list[str] = [f"# Evaluation report: {s['name']}", ""]
    kind = "evaluation directory" if s.get("kind") == "eval" else "single run directory"
    L += [f"- **name**: {s['name']} ({kind})", f"- **created**: {s.get('created') or NOT_RECORDED}",
          (f"- **budget**: T = {T} attempts per operator; **operators**: {n_tasks}; "
          f"**seeds**: {', '.join(map(str, s['seeds'])) or 'none'}; **stages**: {' → '.join(s['stages']) or '—'}"),
          f"- **reference group** (paired differences): {s.get('reference') or '—'}", ""]
    backend = str((s.get("conditions") or {}).get("backend") or "")
    if backend in MODELLED_BACKENDS:
        L += [f"**Latencies are estimates.** The {backend} backend runs Ascend C on a CPU emulator; every latency "
              "and speedup below comes from its latency model (the kernel's emulated pipe schedule vs one NPU "
              "kernel per eager PyTorch operator, on the same Ascend 910B constants), not from a clock.", ""]

    # status
    prog = s["progress"]
    done = sum(p["attempts"] for p in prog.values())
    want = sum(p["expected"] for p in prog.values())
    if s["complete"]:
        L += [f"**Status: complete** — every arm has all {n_tasks} × {T} attempts on record ({done} in all).", ""]
    else:
        L += [(f"**Status: PARTIAL** — {done} of {want} expected attempts on record across {len(prog)} arm(s). "
              "Metrics are computed over what exists; operators without records count as failures, and arms "
              "with no record at all are left out of the means."), ""]
        if s["missing_arms"]:
            L += [f"Missing arms (no attempt on record): {', '.join(s['missing_arms'])}.", ""]
    if not done:
        L += ["**No attempts on record**: every metric below is undefined (—).", ""]
    L += _table(["arm", "attempts", "expected", "done"],
                ([k, p["attempts"], p["expected"], pct(p["attempts"] / p["expected"], 0) if p["expected"] else "—"]
                 for k, p in prog.items()))

    L += ["## Reproduce", "", "```", s.get("command") or NOT_RECORDED, "```", ""]
    if s.get("kind") == "run":
        L += ["(Reconstructed from `run.json`.)", ""]
    L += ["## Conditions", ""] + _condition_lines(s.get("conditions") or {})
    L += _sizes_lines(s.get("task_sizes"))

    # main table
    L += ["## Results", "",
          ("Mean over the seeds on record (± sample standard deviation when ≥ 2 seeds; shares in percentage "
          "points); `seeds` is how many seeds each mean is over. Tokens, cost and wall time are sums over seeds. "
          "*geomean vs eager* is each operator's best kernel; *first kernel vs eager* its first feasible kernel "
          "(what drafting produced): a method with fast first drafts has less left for *speedup vs first*."), ""]
    head = ["group", "seeds", "CR", "Acc", "round-1 Acc", "median speedup vs first [IQR]", "geomean vs eager",
            "first kernel vs eager", "fast_1", "tokens in / out", "cost", "wall time"]
    rows = []
    for g, m in methods.items():
        n, sp = m["n_seeds"], m["spread"]
        q1, q3 = m["iqr_speedup_vs_first"]
        iqr = f" [{q1:.2f}–{q3:.2f}×]" if q1 is not None and q3 is not None else ""
        med = _with_sd(sp["median_speedup_vs_first"], "x", n)
        rows.append([g, n, _with_sd(sp["compile_rate"], "pct", n), _with_sd(sp["correctness"], "pct", n),
                     _with_sd(sp["round1_correctness"], "pct", n), med + (iqr if med != "—" else ""),
                     _with_sd(sp["geomean_speedup_vs_eager"], "x", n),
                     _with_sd(sp.get("geomean_first_speedup_vs_eager"), "x", n), _with_sd(sp.get("fast_p@1"), "pct", n),
                     f"{count(m['tokens_in'])} / {count(m['tokens_out'])}", money(m["cost_usd"]),
                     duration(m["wall_s"])])
    L += _table(head, rows)
    if any(m["spread"].get("geomean_speedup_vs_compile", {}).get("n") for m in methods.values()):
        L += ["", "Speedup vs torch.compile (the reference compiled by `torch.compile`, timed in the same rounds; "
              "geometric mean over solved operators of each best kernel's ratio):", ""]
        L += _table(["group", "geomean vs torch.compile"],
                    [[g, _with_sd(m["spread"].get("geomean_speedup_vs_compile"), "x", m["n_seeds"])]
                     for g, m in methods.items()])

    # outcomes of the attempts
    if any(sum((m.get("outcomes") or {}).values()) for m in methods.values()):
        keys = list(dict.fromkeys(k for m in methods.values() for k, v in (m.get("outcomes") or {}).items()
                                  if v or k in ("feasible", "generate")))
        L += ["### Attempts by outcome", "", ("Every attempt on record (all seeds), feasible or the gate that "
              "rejected it; `generate` means the reply held no usable candidate (nothing was verified)."), ""]
        rows = []
        for g, m in methods.items():
            oc = m.get("outcomes") or {}
            total = sum(oc.values())
            rows.append([g, total, *[f"{oc.get(k, 0)} ({oc.get(k, 0) / total:.0%})" if total else "—" for k in keys]])
        L += _table(["group", "attempts", *keys], rows)

    # fast_p
    pkeys = list(dict.fromkeys(p for m in methods.values() for p in m["fast_p"]))
    L += ["### fast_p", "", ("Share of all operators whose best kernel is correct and faster than PyTorch eager "
          "by more than p× (fast_0 = Acc)."), ""]
    L += _table(["group", *[f"fast_{p}" for p in pkeys]],
                ([g, *[_with_sd(m["spread"].get(f"fast_p@{p}"), "pct", m["n_seeds"]) for p in pkeys]]
                 for g, m in methods.items()))

    # per category
    cats = list(dict.fromkeys(c for m in methods.values() for c in m["per_category"]))
    L += ["### By category", ""]
    if cats:
        head = ["category", "operators"]
        for g in methods:
            head += [f"{g} Acc", f"{g} geomean vs eager"]
        rows = []
        for c in cats:
            n = next((m["per_category"][c]["n_tasks"] for m in methods.values() if c in m["per_category"]), "—")
            row: list[Any] = [c, n]
            for m in methods.values():
                pc = m["per_category"].get(c) or {}
                row += [pct(pc.get("correctness")), times(pc.get("geomean_speedup_vs_eager"))]
            rows.append(row)
        L += _table(head, rows)
    else:
        L += ["*No data.*", ""]

    # per stage
    if len(s["stages"]) > 1:
        L += ["### By stage (transfer)", "",
              (f"Stages in stream order ({' → '.join(s['stages'])}): each row is over that stage's operators only. "
              "With a memory shared along the stream, later stages run with what earlier stages stored."), ""]
        rows = []
        for g, m in methods.items():
            for st in s["stages"]:
                r = m["per_stage"].get(st) or {}
                sp = r.get("spread") or {}
                rows.append([g, st, r.get("n_tasks", "—"), _with_sd(sp.get("compile_rate"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("correctness"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("round1_correctness"), "pct", m["n_seeds"]),
                             _with_sd(sp.get("median_speedup_vs_first"), "x", m["n_seeds"]),
                             _with_sd(sp.get("geomean_speedup_vs_eager"), "x", m["n_seeds"]),
                             _with_sd(sp.get("geomean_first_speedup_vs_eager"), "x", m["n_seeds"]),
                             pct((r.get("fast_p") or {}).get("1"))])
        L += _table(["group", "stage", "operators", "CR", "Acc", "round-1 Acc", "median speedup vs first",
                     "geomean vs eager", "first kernel vs eager", "fast_1"], rows)

    # paired differences
    ref = s.get("reference")
    L += ["## Paired differences", ""]
    if not s["paired"]:
        L += [f"Only one group ({ref}): nothing to compare.", ""]
    else:
        L += [(f"Per (seed, operator) pair over the seeds both groups have: difference = group − {ref} (the "
              "reference). A positive difference means the group did better for *solved* (percentage points of "
              "operators) and for the log speedups (the × figure is the ratio of speedups, exp of the mean log "
              "difference); for *first feasible attempt* a positive difference means the group needed MORE "
              "attempts, i.e. did worse. Wins / losses / ties count pairs where the group's value is above / below "
              "/ equal to the reference's; `only` counts pairs where one side has no value (e.g. unsolved)."), ""]
        for pair, row in s["paired"].items():
            g = pair.split(" vs ")[0]
            L += [f"### {pair}", "", f"Seeds compared: {', '.join(map(str, row.get('seeds') or [])) or 'none'}.", ""]
            L += _table(["metric", "n pairs", "mean diff", "median diff", "wins", "losses", "ties",
                         f"only {g}", f"only {ref}"],
                        ([_PAIRED_LABELS.get(mk, mk), d["n"], _diff(mk, d["mean_diff"]), _diff(mk, d["median_diff"]),
                          d["wins"], d["losses"], d["ties"], d["only_a"], d["only_b"]]
                         for mk, d in row.items() if isinstance(d, Mapping)))

    # figures
    L += ["## Figures", ""]
    captions = {
        "tiers": "Correctness and speedup vs eager, by category (seeds pooled)",
        "cumulative_success": "Cumulative success vs attempts (mean over seeds"
                              + ("; one line per group × stage)" if len(s["stages"]) > 1 else ")"),
        "trajectories": "Best-so-far latency of selected operators",
        "q_values": "Memory item values (Q1 draft, Q2 refine) over the value ledger",
        "comparison": "Groups compared (mean ± sd over seeds)",
    }
    if not figures:
        L += ["*Figures were not generated.*", ""]
    else:
        for name, f in figures["files"].items():
            note = figures["notes"].get(name)
            if f:
                L += [f"![{captions.get(name, name)}]({f})", ""]
                L += [f"*{captions.get(name, name)}*" + (f" — {note}." if note else ""), ""]
            else:
                L += [f"*{captions.get(name, name)}: {note or 'skipped'}.*", ""]

    L += ["## Definitions", "",
          ("Every number comes from `evals/metrics.py` (`evokernel.evals.metrics`); `docs/metrics.md` in the "
          "EvoKernel repository states each definition and the choices behind it. **CR**: share of generated kernels (attempts) that compile, generation "
          "failures counted as not compiled. **Acc**: share of the listed operators with a feasible kernel within "
          f"the first T = {T} attempts (unattempted operators count as failures). **Round 1**: CR and Acc over each "
          "operator's first attempt. **Within-operator speedup**: first timed feasible latency / best latency, over "
          "operators with ≥ 2 timed feasible kernels; median and IQR (linear quartiles) across operators. "
          "**Speedup vs eager**: the best kernel's own speedup over PyTorch eager; geometric mean over operators "
          "that have one. **fast_p**: share of all operators whose best kernel is correct with speedup vs eager "
          "strictly greater than p."), ""]
    return "\n".join(L)


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
