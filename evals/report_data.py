"""Reading what the report is built from (``evokernel.evals.report``): an eval directory written by the harness,
or one run directory of ``evokernel run``, as :class:`EvalData` (groups, arms, tasks, conditions); the file
names and the metric lists the report uses. The layout it reads is described in :mod:`.report`.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evokernel.verifier.backends.registry import names, spec

from . import metrics as M

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
#: backends whose latencies are modelled, not measured (the report says so)
MODELLED_BACKENDS = tuple(name for name in names() if spec(name).timing == "model")
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
        opts += [("--generator", gen), ("--temperature", ctx.get("temperature"))]
    if inputs.get("limit"):
        opts.append(("--limit", inputs["limit"]))
    for k, v in (inputs.get("overrides") or {}).items():
        opts.append(("--set", f"{k}={v}"))
    fit = ctx.get("fit") or inputs.get("fit")  # a run setting; runs of older versions kept it in their input
    if fit:
        opts.append(("--fit", fit))
    if ctx.get("memory_dir"):
        opts.append(("--memory-dir", ctx["memory_dir"]))
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
