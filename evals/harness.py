"""`evokernel eval`: the paper's protocol over methods × seeds, run as ordinary `evokernel run`s.

**Plan.** A config (:mod:`evokernel.evals.config`) expands into *groups* (method × retrieval
policy × memory mode × model; the first group is the reference of paired comparisons), each run
once per seed (an *arm*). An arm is one or more *units*; a unit is one `evokernel run` process with
its own run directory. How an arm splits into units follows its memory mode:

=============  ==========================================================================
shared         one unit over the whole stream (with ``memory_server`` and workers > 1: one
               shard per worker, all on one Chroma server the harness starts for the arm)
exported       as shared, after importing ``memory_from`` minus the evaluated tasks' items
none           as shared, but nothing is retrieved and the prompt's seed knowledge is the
               candidate-format item only (policy none, ``--seed-knowledge format``)
ordered        one unit per stage (suite), each waiting for the previous, on one memory
fresh          one unit per stage, each with a new memory
per-task       one unit per task, each with a new memory
passk / refinement  tasks are independent (private memory): one shard per worker
=============  ==========================================================================

**Layout** (``OUT`` is the output directory)::

    OUT/eval.json                             config, tasks, stages, groups, arms, units, conditions
    OUT/progress.json                         status of every unit (written by this process only)
    OUT/arms/<group>/seed-<s>/memory/         the arm's memory (evokernel)
    OUT/arms/<group>/seed-<s>/runs/<unit>/    the unit's run directory (attempts.jsonl, summary, best/)
    OUT/logs/<group>__seed-<s>__<unit>.log    the unit's console output
    OUT/summary.json, OUT/report.md, OUT/figures/*.png   (evokernel.evals.report)

**Resume.** Running the same eval again continues it: finished units are skipped, interrupted ones
continue from their LangGraph checkpoints (``evokernel run --resume``); the plan in eval.json is
reused, so changing ``workers`` between invocations is fine but changing what is run is refused, with
one exception: more seeds (``--seeds 0,1`` on an eval of seed 0) extend it; the seeds already run keep
their units and results, the new ones are appended (eval.json records when).

**Isolation and stopping.** Each unit is its own process (its own verifier sandboxes, its own
Chroma owner), run inside a Ray actor on whichever node has its resources (:mod:`evokernel.evals.engine`);
a crash fails that unit only, a lost node or actor runs it again with ``--resume``. Ctrl-C forwards one SIGINT to every running unit
(they stop after logging finished attempts), waits for them, writes the partial report and exits
130; unit processes also die with the harness if it is killed outright.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from evokernel.evals.config import ConfigError, EvalConfig, make_config, upgrade
from evokernel.evals.engine import UnitLost, unit_resources
from evokernel.evals.memory_server import LOOPBACK, ChromaServer, server_host
from evokernel.runtime.run_dir import safe_name
from evokernel.settings import write_settings_file

EVAL_JSON = "eval.json"
PROGRESS_JSON = "progress.json"
SHARED_MODES = ("shared", "exported", "none")
MAX_LOST = 3  # a unit whose node or actor dies is run again (resumed) at most this many times


# ---------------------------------------------------------------- plan


@dataclass
class Unit:
    key: str  # "<group>/seed-<s>/<name>", unique in the eval
    arm: str  # "<group>/seed-<s>"
    name: str
    run_dir: str  # relative to OUT
    memory: str  # relative to OUT
    task_ids: list[str]
    targets: list[str]  # what `evokernel run` is given for these tasks
    after: str | None = None  # a unit that must finish first (ordered stages)
    server: bool = False  # memory served by the arm's Chroma server
    overrides: dict[str, Any] = field(default_factory=dict)  # the --set values these tasks define


def resolve_tasks(cfg: EvalConfig) -> list[dict[str, Any]]:
    """The benchmark's operators in stream order: id, stage (the built-in suite, else the config entry),
    category, path, the argument that names the task for `evokernel run`, the user's overrides and the
    size fit (``cfg.fit``: each unit's `evokernel run --fit` computes the same, deterministically).
    Bad entries and unused overrides are errors."""
    from evokernel.graph.resources import task_id
    from evokernel.tasks.load import fit_tasks, load_tasks
    from evokernel.tasks.task import TaskError

    out: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    used: set[str] = set()
    for entry in cfg.tasks:
        try:
            tasks = load_tasks(entry, dict(cfg.set))
        except TaskError as e:
            raise ConfigError(f"tasks: {e}") from None
        for line in getattr(tasks, "skipped", []):  # a bad file of a task directory: named, the rest runs
            print(f"skipped {line}", file=sys.stderr)
        if cfg.limit:
            tasks = tasks[: cfg.limit]
        try:
            tasks = fit_tasks(tasks, cfg.fit, cfg.backend)
        except TaskError as e:
            raise ConfigError(f"fit: {e}") from None
        for t in tasks:
            tid = task_id(t)
            if tid in seen:
                raise ConfigError(f"tasks: {tid} is listed twice (in {seen[tid]!r} and {entry!r})")
            seen[tid] = entry
            used.update(t.overrides)
            # suite tasks named one by one still form one stage per suite; files named one by one, one
            # stage per directory (KernelBench's level1/ and level2/)
            stage = t.suite or (entry if not Path(entry).is_file() else str(Path(entry).parent))
            out.append({"id": tid, "stage": stage, "suite": stage, "category": t.category, "path": str(t.path),
                        "arg": f"{t.suite}/{t.name}" if t.suite else str(t.path),
                        "overrides": dict(t.overrides), "fit": t.fit})
    unused = sorted(set(cfg.set) - used)
    if unused:
        raise ConfigError(f"set: no task defines {', '.join(unused)}")
    for tid in cfg.trajectories:
        if tid not in seen:
            raise ConfigError(f"trajectories: {tid!r} is not one of the evaluated tasks")
    return out


def groups_of(cfg: EvalConfig) -> list[dict[str, Any]]:
    models = cfg.model_list()
    out = []
    for model in models:
        for method in cfg.methods:
            combos = cfg.evokernel_variants() if method == "evokernel" else [(None, None)]
            policies = {p for p, _ in combos}
            memories = {m for _, m in combos}
            for policy, memory in combos:
                parts = [method]
                if method == "evokernel":
                    if len(policies) > 1 or policy != "value":
                        parts.append(policy)
                    if len(memories) > 1 or memory != "shared":
                        parts.append(memory)
                if len(models) > 1:
                    parts.insert(0, model)
                out.append({"name": safe_name("-".join(parts)), "method": method, "policy": policy,
                            "memory": memory or "private", "model": model})
    return out


def _chunks(items: list[Any], k: int) -> list[list[Any]]:
    k = max(1, min(k, len(items)))
    size, extra = divmod(len(items), k)
    out, i = [], 0
    for j in range(k):
        n = size + (1 if j < extra else 0)
        out.append(items[i:i + n])
        i += n
    return out


def plan(cfg: EvalConfig, tasks: list[dict[str, Any]]) -> dict[str, Any]:
    """Groups, arms and units (see the module docstring)."""
    groups = groups_of(cfg)
    stages = list(dict.fromkeys(t["stage"] for t in tasks))
    arms, units = [], []
    # seed-major: an eval stopped early has whole seeds of every group, not every seed of a few groups
    for seed in cfg.seeds:
        for g in groups:
            arm = f"{g['name']}/seed-{seed}"
            adir = f"arms/{arm}"
            arms.append({"group": g["name"], "seed": seed, "dir": adir})

            def unit(name: str, ts: list[dict[str, Any]], memory: str, **kw: Any) -> Unit:
                ov = {k: v for t in ts for k, v in t["overrides"].items()}
                return Unit(key=f"{arm}/{name}", arm=arm, name=name, run_dir=f"{adir}/runs/{name}", memory=memory,
                            task_ids=[t["id"] for t in ts], targets=[t["arg"] for t in ts], overrides=ov, **kw)

            mode = g["memory"]
            if g["method"] != "evokernel":
                shards = _chunks(tasks, cfg.workers)
                for i, ts in enumerate(shards):
                    name = "all" if len(shards) == 1 else f"shard-{i + 1}of{len(shards)}"
                    units.append(unit(name, ts, f"{adir}/runs/{name}/memory"))
            elif mode in SHARED_MODES:
                shards = _chunks(tasks, cfg.workers if cfg.memory_server else 1)
                for i, ts in enumerate(shards):
                    name = "all" if len(shards) == 1 else f"shard-{i + 1}of{len(shards)}"
                    units.append(unit(name, ts, f"{adir}/memory", server=len(shards) > 1))
            elif mode in ("ordered", "fresh"):
                prev = None
                for i, st in enumerate(stages):
                    name = f"stage-{i + 1}-{safe_name(st)}"
                    ts = [t for t in tasks if t["stage"] == st]
                    mem = f"{adir}/memory" if mode == "ordered" else f"{adir}/memory/{safe_name(st)}"
                    u = unit(name, ts, mem, after=prev if mode == "ordered" else None)
                    units.append(u)
                    prev = u.key
            elif mode == "per-task":
                for t in tasks:
                    name = f"task-{safe_name(t['id'])}"
                    units.append(unit(name, [t], f"{adir}/memory/{safe_name(t['id'])}"))
            else:  # pragma: no cover - config validation rejects other modes
                raise ConfigError(f"unknown memory mode {mode!r}")
    return {"groups": groups, "stages": stages, "arms": arms, "units": [asdict(u) for u in units]}


# ---------------------------------------------------------------- eval directory


class EvalDir:
    """OUT: eval.json (written once), progress.json (this process's view of every unit)."""

    def __init__(self, path: Path):
        self.path = Path(path)

    @property
    def meta_path(self) -> Path:
        return self.path / EVAL_JSON

    def exists(self) -> bool:
        return self.meta_path.exists()

    def load(self) -> dict[str, Any]:
        try:
            return json.loads(self.meta_path.read_text())
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read {self.meta_path}: {e}") from None

    def create(self, meta: dict[str, Any]) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        _write_json(self.meta_path, meta)

    def progress(self) -> dict[str, Any]:
        p = self.path / PROGRESS_JSON
        if not p.exists():
            return {}
        try:
            return json.loads(p.read_text())
        except json.JSONDecodeError:
            return {}  # rebuilt from the run directories as units are re-checked

    def save_progress(self, progress: dict[str, Any]) -> None:
        _write_json(self.path / PROGRESS_JSON, progress)


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, path)


def prepare(cfg: EvalConfig, command: str, out: Path | None = None) -> tuple[EvalDir, dict[str, Any]]:
    """Create the eval directory, or check that an existing one holds the same plan."""
    from evokernel.evals import conditions

    ed = EvalDir(out or cfg.output_dir)
    tasks = resolve_tasks(cfg)
    if ed.exists():
        meta = ed.load()
        old = meta.get("plan_key")
        if isinstance(old, dict):  # evals of older versions: today's names (evals.config.upgrade)
            old = meta["plan_key"] = upgrade(old)
            if isinstance(meta.get("config"), dict):
                meta["config"] = upgrade(meta["config"])
        if isinstance(old, dict) and "llm_experiences" not in old:
            # evals from before model-written memory: an LLM eval stored template sentences and distilled nothing
            # (continuing it with the new defaults would mix the two in one eval); the template generator
            # ignores both settings
            llm = any(g != "template" for g in old.get("generators") or [])
            learned = {"llm_experiences": False if llm else cfg.llm_experiences,
                       "distil_every": 0 if llm else cfg.distil_every}
            old.update(learned)
            if isinstance(meta.get("config"), dict):
                meta["config"].update({k: v for k, v in learned.items() if k not in meta["config"]})
        new = json.loads(json.dumps(cfg.plan_key()))
        if isinstance(old, dict):  # a setting added since the eval was made: it ran with that setting's default
            defaults = json.loads(json.dumps(EvalConfig.model_construct().model_dump()))
            for k in set(new) - set(old):
                if new[k] == defaults.get(k):
                    old[k] = new[k]
        diff = sorted(k for k in set(old or {}) | set(new) if (old or {}).get(k) != new.get(k))
        if diff == ["seeds"] and set(old["seeds"]) < set(new["seeds"]):
            # more seeds of the same plan: the seeds already run keep their units (same keys), the new ones
            # are added after them (seed-major, as a new eval would order them)
            added = [s for s in new["seeds"] if s not in old["seeds"]]
            cfg = cfg.model_copy(update={"seeds": list(old["seeds"]) + added})
            meta["plan_key"] = json.loads(json.dumps(cfg.plan_key()))
            meta["config"]["seeds"] = cfg.seeds
            meta.update(plan(cfg, tasks))
            meta.setdefault("conditions", {})["seeds"] = ", ".join(map(str, cfg.seeds))
            meta.setdefault("seeds_added", []).append({"seeds": added, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        elif diff:
            more = (" (seeds may only be added: every seed already in it must stay)" if diff == ["seeds"] else "")
            raise ConfigError(f"{ed.path} holds an eval with other settings ({', '.join(diff)} differ{more}): "
                              "continue it with its own settings (evokernel eval --out DIR) or pick another --out")
        meta["config"]["workers"] = cfg.workers  # parallelism and placement may change between invocations
        meta["config"]["ray"] = cfg.ray
        meta["config"]["memory_server"] = cfg.memory_server
        meta["config"]["trajectories"] = cfg.trajectories
        meta.setdefault("invocations", []).append({"command": command, "time": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
        ed.create(meta)
        return ed, meta
    meta = {
        "name": cfg.name,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": command,
        "config": cfg.model_dump(),
        "plan_key": json.loads(json.dumps(cfg.plan_key())),
        "tasks": [{k: v for k, v in t.items() if k != "overrides"} | {"overrides": t["overrides"]} for t in tasks],
        **plan(cfg, tasks),
        "conditions": conditions.collect(cfg.strict, cfg.backend),
    }
    meta["conditions"]["generator"] = ", ".join(cfg.model_list())
    meta["conditions"]["budget"] = f"T = {cfg.budget} attempts per operator, drafting and refining together"
    meta["conditions"]["seeds"] = ", ".join(map(str, cfg.seeds))
    ed.create(meta)
    return ed, meta


def config_of(meta: dict[str, Any]) -> EvalConfig:
    return make_config(upgrade(meta["config"]), EVAL_JSON)


# ---------------------------------------------------------------- running units


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


UNIT_SETTINGS = "unit-settings.json"  # in the unit's run directory: what the harness gave it


def unit_settings(cfg: EvalConfig, group: dict[str, Any], seed: int, u: Unit, out: Path,
                  memory_url: str | None, ray_address: str | None = None) -> dict[str, Any]:
    """Everything a unit's `evokernel run` is given, as one settings file (evokernel.settings): the eval's run
    section, the unit's group and seed, where its memory and run directory are, and its tasks; the other
    settings are set as their ``eval`` role says."""
    data = cfg.run_settings() | {
        "method": group["method"], "policy": group["policy"] or "value", "seed": seed,
        "generator": group["model"],  # "template" or the LLM spec
        "seed_knowledge": "format" if group["memory"] == "none" else "all",
        "recall": False,  # each arm measures from scratch, whatever its memory holds of the same task
        "memory_dir": str(out / u.memory), "run_dir": str(out / u.run_dir),
        "tasks": list(u.targets), "set": dict(u.overrides)}
    if memory_url:
        data["memory_url"] = memory_url
    if cfg.concurrency > 1 and ray_address:  # the unit's verifier actors join the eval's Ray
        data["ray"] = ray_address
    return data


def unit_command(cfg: EvalConfig, group: dict[str, Any], seed: int, u: Unit, out: Path, resume: bool,
                 memory_url: str | None, ray_address: str | None = None) -> list[str]:
    """The unit's command: `evokernel run --settings FILE` (``--resume`` to continue it), FILE written here into its
    run directory (on a resume only where its memory server and Ray are may change: the rest is in run.json)."""
    path = write_settings_file(out / u.run_dir / UNIT_SETTINGS,
                               unit_settings(cfg, group, seed, u, out, memory_url, ray_address))
    return [sys.executable, "-m", "evokernel", "run", "--settings", str(path)] + (["--resume"] if resume else [])


def count_attempts(run_dir: Path) -> int:
    p = run_dir / "attempts.jsonl"
    try:
        return p.read_bytes().count(b"\n")
    except OSError:
        return 0


@dataclass
class _Running:
    unit: Unit
    actor: Any  # the unit's engine._UnitProcess actor
    ref: Any  # ObjectRef of its run result
    started: float


class Runner:
    """Executes the units of an eval directory, ``workers`` at a time (see the module docstring)."""

    def __init__(self, ed: EvalDir, meta: dict[str, Any], workers: int | None = None,
                 on_event: Callable[[str, dict[str, Any]], None] | None = None, poll_s: float = 0.5,
                 engine: Any = None, ray: str | None = None):
        self.ed, self.meta = ed, meta
        self.cfg = config_of(meta)
        self.workers = workers or self.cfg.workers
        self.engine = engine  # evals.engine.RayEngine; started by run() when not given
        self.ray_address = ray or self.cfg.ray
        self.units = [Unit(**u) for u in meta["units"]]
        self.groups = {g["name"]: g for g in meta["groups"]}
        # a new invocation retries what did not finish (failed or interrupted units resume)
        self.progress = {k: v | ({} if v.get("status") == "done" else {"status": "pending"})
                         for k, v in ed.progress().items()}
        self.on_event = on_event or (lambda kind, data: None)
        self.poll_s = poll_s
        self.running: dict[str, _Running] = {}
        self.servers: dict[str, ChromaServer] = {}
        self.memory_host = LOOPBACK  # where the arms' Chroma servers listen (the node's address on a cluster)
        self.ledger_owner: Any = None  # memory.value_service.OwnerHandle on a cluster
        self._env_before: dict[str, str | None] = {}
        (ed.path / "logs").mkdir(parents=True, exist_ok=True)

    # -- bookkeeping
    def status(self, u: Unit) -> str:
        return self.progress.get(u.key, {}).get("status", "pending")

    def _set(self, u: Unit, **kw: Any) -> None:
        self.progress.setdefault(u.key, {}).update(kw)
        self.ed.save_progress(self.progress)

    def attempts(self, u: Unit) -> int:
        return count_attempts(self.ed.path / u.run_dir)

    def arm_attempts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in self.units:
            out[u.arm] = out.get(u.arm, 0) + self.attempts(u)
        return out

    def arm_expected(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for u in self.units:
            out[u.arm] = out.get(u.arm, 0) + len(u.task_ids) * self.cfg.budget
        return out

    def _seed_group(self, u: Unit) -> tuple[dict[str, Any], int]:
        group, seed = u.arm.rsplit("/seed-", 1)
        return self.groups[group], int(seed)

    # -- scheduling
    def _ready(self, u: Unit, blocked: set[str]) -> bool:
        if self.status(u) == "done" or u.key in self.running or u.key in blocked:
            return False
        if u.after and self.status(next(x for x in self.units if x.key == u.after)) != "done":
            return False
        busy = {r.unit.memory for r in self.running.values() if not r.unit.server}
        busy |= {r.unit.memory for r in self.running.values() if r.unit.server and not u.server}
        return u.memory not in busy

    def _prepare_arm(self, u: Unit) -> None:
        group, _ = self._seed_group(u)
        if group["memory"] != "exported":
            return
        mem = self.ed.path / u.memory
        marker = mem / ".imported"
        if marker.exists():
            return
        cmd = [sys.executable, "-m", "evokernel", "memory", "import", self.cfg.memory_from, "--memory", str(mem)]
        for t in self.meta["tasks"]:
            cmd += ["--exclude-task", t["id"]]
        log = self.ed.path / "logs" / f"{safe_name(u.arm)}__import.log"
        with log.open("ab") as f:
            rc = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode
        if rc != 0:
            raise RuntimeError(f"importing {self.cfg.memory_from} into {mem} failed (log: {log})")
        marker.write_text(self.cfg.memory_from + "\n")

    def _start(self, u: Unit) -> None:
        group, seed = self._seed_group(u)
        self._prepare_arm(u)
        url = None
        if u.server:
            if u.arm not in self.servers:
                self.servers[u.arm] = ChromaServer(self.ed.path / u.memory,
                                                   self.ed.path / "logs" / f"{safe_name(u.arm)}__chroma.log",
                                                   host=self.memory_host)
            url = self.servers[u.arm].url
        resume = (self.ed.path / u.run_dir / "run.json").exists()
        # absolute paths: the unit may run on another node (which sees the eval directory at the same path)
        address = self.engine.unit_address() if self.cfg.concurrency > 1 else None
        cmd = unit_command(self.cfg, group, seed, u, self.ed.path.resolve(), resume, url, address)
        logp = self.ed.path / "logs" / f"{safe_name(u.key.replace('/', '__'))}.log"
        with logp.open("ab") as log:
            log.write(f"\n$ {shlex.join(cmd)}\n".encode())
        actor, ref = self.engine.submit(cmd, os.getcwd(), str(logp.resolve()), unit_resources(self.cfg.backend, self.cfg.concurrency))
        self.running[u.key] = _Running(u, actor, ref, time.monotonic())
        self._set(u, status="running", log=str(logp.relative_to(self.ed.path)), resumed=resume)
        self.on_event("start", {"unit": u.key, "resume": resume, "log": str(logp)})

    def _reap(self) -> None:
        done = set(self.engine.finished([r.ref for r in self.running.values()]))  # ObjectRefs hash by their id
        for key, r in list(self.running.items()):
            if r.ref not in done:
                continue
            del self.running[key]
            wall = time.monotonic() - r.started
            prev = self.progress.get(key, {}).get("wall_s", 0.0)
            n = self.attempts(r.unit)
            try:
                res = self.engine.result(r.ref)
            except UnitLost as exc:  # its node or actor died: run it again (resumed), up to MAX_LOST times
                lost = self.progress.get(key, {}).get("lost", 0) + 1
                status = "interrupted" if lost <= MAX_LOST else "failed"
                self._set(r.unit, status=status, rc=None, wall_s=prev + wall, attempts=n, lost=lost,
                          error=f"lost its node or actor ({exc})")
                self.on_event("lost", {"unit": key, "error": str(exc), "attempts": n, "lost": lost,
                                       "log": self.progress[key].get("log")})
                if status == "failed":
                    self.on_event("failed", {"unit": key, "rc": None, "error": f"lost {lost} times: {exc}"})
                continue
            rc = res["rc"]
            status = "done" if rc == 0 else ("interrupted" if rc == 130 else "failed")
            self._set(r.unit, status=status, rc=rc, wall_s=prev + wall, attempts=n, host=res.get("host"),
                      node=res.get("node"))
            self.on_event(status, {"unit": key, "rc": rc, "wall_s": wall, "attempts": n, "host": res.get("host"),
                                   "log": self.progress[key].get("log")})
        for arm, server in list(self.servers.items()):
            if not any(u.server and u.arm == arm and self.status(u) not in ("done", "failed") for u in self.units):
                server.stop()
                del self.servers[arm]

    def run(self) -> str:
        """Run every unit not yet done; 'finished', 'failed' (some unit failed) or 'interrupted'."""
        blocked: set[str] = set()
        failed: set[str] = set()
        # SIGTERM (a job scheduler, `kill`) stops as cleanly as Ctrl-C
        main = threading.current_thread() is threading.main_thread()
        previous = signal.signal(signal.SIGTERM, _interrupt) if main else None
        own_engine = self.engine is None
        try:
            if own_engine:
                from evokernel.evals.engine import RayEngine

                self.engine = RayEngine(self.ray_address)
            self._open_cluster_memory()
            if own_engine:
                self.on_event("engine", {"address": self.ray_address, "started_here": self.engine.started_here,
                                         "resources": self.engine.resources(), "nodes": len(self.engine.nodes()),
                                         "memory_host": self.memory_host,
                                         "ledger_owner": self.ledger_owner.setting if self.ledger_owner else ""})
            while True:
                self._reap()
                for u in self.units:
                    if self.status(u) == "failed" and u.key not in self.running and u.key not in failed:
                        failed.add(u.key)
                        # a failed stage blocks the stages that need its memory
                        blocked |= {x.key for x in self.units if x.after == u.key}
                while len(self.running) < self.workers:
                    nxt = next((u for u in self.units if self._ready(u, blocked | failed)), None)
                    if nxt is None:
                        break
                    try:
                        self._start(nxt)
                    except (OSError, RuntimeError) as e:
                        self._set(nxt, status="failed", error=str(e))
                        self.on_event("failed", {"unit": nxt.key, "rc": None, "error": str(e)})
                        failed.add(nxt.key)
                self.on_event("tick", {})
                if not self.running:
                    break
                time.sleep(self.poll_s)
        except KeyboardInterrupt:
            self.stop()
            return "interrupted"
        finally:
            for server in self.servers.values():
                server.stop()
            self.servers.clear()
            self._close_cluster_memory()
            if own_engine and self.engine is not None:
                self.engine.shutdown()
                self.engine = None
            if main:
                signal.signal(signal.SIGTERM, previous)
        return "finished" if all(self.status(u) == "done" for u in self.units) else "failed"

    def _open_cluster_memory(self) -> None:
        """On a cluster (the engine joined one): the arms' Chroma servers listen on this node's address, and one
        owner actor (on this node) writes every value ledger of the eval, which units and imports reach through
        EVOKERNEL_VALUE_LEDGER (memory/value_service.py); flock over the shared filesystem is no guarantee across
        hosts. A private local Ray keeps loopback and flock (one host, a local filesystem: no actor to run)."""
        self.memory_host = server_host(self.engine)
        if getattr(self.engine, "started_here", True):
            return
        from evokernel.memory.value_service import start_owner

        self.ledger_owner = start_owner(self.ed.path.resolve())
        env = self.ledger_owner.env()  # forwarded to every unit (EVOKERNEL_*), inherited by imports
        self._env_before = {k: os.environ.get(k) for k in env}
        os.environ.update(env)

    def _close_cluster_memory(self) -> None:
        for k, v in self._env_before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._env_before = {}
        if self.ledger_owner is not None:
            self.ledger_owner.stop()
            self.ledger_owner = None

    def stop(self, grace_s: float = 120.0) -> None:
        """One SIGINT to every running unit, then wait (a second Ctrl-C or the grace period: kill)."""
        for r in self.running.values():
            self.engine.interrupt(r.actor)
        deadline = time.monotonic() + grace_s
        try:
            while self.running and time.monotonic() < deadline:
                self._reap()
                time.sleep(0.2)
        except KeyboardInterrupt:
            pass
        killed = list(self.running)
        for r in list(self.running.values()):
            self.engine.kill(r.actor)
        self.running.clear()
        for key, p in self.progress.items():
            if p.get("status") == "running" or key in killed:
                p["status"] = "interrupted"
        self.ed.save_progress(self.progress)
