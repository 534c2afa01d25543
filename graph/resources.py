"""Process-wide resources the nodes share: verifier, memory store, generator, run log, token ledger.

The graph state and the runtime context must stay JSON (they cross the LangGraph server and the
checkpointer), so nodes look heavy objects up here by the context's settings. Each is created
once per process and reused across tasks and runs with the same settings:

* the **verifier** is owned by one long-lived thread: its sandboxes are tied to the thread that
  started them (bubblewrap's --die-with-parent follows the spawning thread), and LangGraph runs
  sync nodes on pool threads that come and go. Verifications are serialised through that thread,
  which is also what honest timing on a shared machine wants;
* the **memory store** is opened once per directory (a Chroma folder has one owning process);
* the **generator** once per spec; the **run log** and **token ledger** once per run directory.

Python callers pass their own objects through the runtime context (``Context(resources=Resources(...))``,
:mod:`evokernel.graph.context`): the nodes and the verifier's tools take them from there first. :func:`install`
(process-wide injection) remains for callers that cannot set the context, e.g. a LangGraph server's graphs.
"""
from __future__ import annotations

import atexit
import random
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from evokernel.graph.context import Context
from evokernel.tasks.load import load_task
from evokernel.tasks.task import Task

_lock = threading.RLock()
_cache: dict[tuple, Any] = {}
_installed: dict[str, Any] = {}


class VerifierService:
    """A Verifier living on its own thread; ``verify`` may be called from any thread."""

    def __init__(self, backend: str, strict: bool = False, verifier: Any = None, compile_baseline: bool = False):
        self.backend = backend
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"verifier-{backend}")
        self._owned = verifier is None
        self._call_lock = threading.Lock()
        if verifier is None:
            self._verifier = self._pool.submit(self._start, backend, strict, compile_baseline).result()
        else:
            self._verifier = verifier

    @staticmethod
    def _start(backend: str, strict: bool, compile_baseline: bool) -> Any:
        from evokernel.verifier.trusted.correctness import DEFAULT_TOL, STRICT_TOL
        from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

        return Verifier(backend, VerifyConfig(tol=STRICT_TOL if strict else DEFAULT_TOL,
                                              compile_baseline=compile_baseline)).start()

    def verify(self, task: Task, source: str) -> Any:
        if self._owned:
            return self._pool.submit(self._verifier.verify, task, source).result()
        with self._call_lock:  # an injected verifier is used from the caller's threads, one at a time
            return self._verifier.verify(task, source)

    def close(self) -> None:
        if self._owned:
            try:
                self._pool.submit(self._verifier.close).result()
            finally:
                self._pool.shutdown(wait=True)


def install(**objects: Any) -> None:
    """Use these objects instead of building them from the context.

    Keys: ``verifier`` (a started Verifier or VerifierService), ``store`` (a MemoryStore),
    ``generator`` (any Generator), ``judge`` (an LLMJudge, used when the context's ``llm_judge`` is set). ``install(generator=None)`` removes an installed object.
    """
    with _lock:
        for name, obj in objects.items():
            if name not in ("verifier", "store", "generator", "judge"):
                raise ValueError(f"cannot install {name!r}: one of verifier, store, generator, judge")
            if obj is None:
                _installed.pop(name, None)
            else:
                _installed[name] = obj if name != "verifier" or isinstance(obj, VerifierService) \
                    else VerifierService(getattr(getattr(obj, "backend", None), "name", "cpu"), verifier=obj)


def _given(ctx: Context, name: str) -> Any:
    """The object the caller put in the run's context (``ctx.resources``) or installed, else None."""
    given = getattr(ctx.resources, name, None) if ctx.resources is not None else None
    if given is None:
        return _installed.get(name)
    pool = sys.modules.get("evokernel.verifier.pool")  # a VerifierPool exists only if its module was imported
    if name == "verifier" and not isinstance(given, VerifierService) and not (
            pool is not None and isinstance(given, pool.VerifierPool)):
        # a bare Verifier is used from the graph's pool threads one call at a time (one service per object)
        return _get(("given-verifier", id(given)), lambda: VerifierService(
            getattr(getattr(given, "backend", None), "name", ctx.backend), verifier=given))
    return given


def _get(key: tuple, make) -> Any:
    with _lock:
        if key not in _cache:
            _cache[key] = make()
        return _cache[key]


def verifier(ctx: Context) -> Any:
    """The run's verifier: one in this process, or with ``concurrency`` K > 1 a pool of K warm verifier actors
    on Ray (:mod:`evokernel.verifier.pool`); both judge with ``verify(task, source)``."""
    given = _given(ctx, "verifier")
    if given is not None:
        return given
    if ctx.concurrency > 1:
        from evokernel.verifier.pool import VerifierPool

        return _get(("pool", ctx.backend, ctx.strict, ctx.compile_baseline, ctx.concurrency, ctx.ray),
                    lambda: VerifierPool(ctx.backend, ctx.concurrency, ctx.strict, ctx.compile_baseline, ctx.ray))
    return _get(("verifier", ctx.backend, ctx.strict, ctx.compile_baseline),
                lambda: VerifierService(ctx.backend, ctx.strict, compile_baseline=ctx.compile_baseline))


def judge(ctx: Context) -> Any:
    """The LLM judge of ``ctx.llm_judge`` (one per spec and process), or None when it is off."""
    if not ctx.llm_judge:
        return None
    given = _given(ctx, "judge")
    if given is not None:
        return given
    from evokernel.verifier.trusted.llm_judge import LLMJudge

    return _get(("judge", ctx.llm_judge), lambda: LLMJudge(ctx.llm_judge))


def store(ctx: Context) -> Any:
    given = _given(ctx, "store")
    if given is not None:
        return given
    from evokernel.graph.methods import shares_memory
    from evokernel.memory.store import MemoryStore

    # the baselines keep their traces in a private memory of the run, never in the shared one
    path, url = (Path(ctx.memory_dir), ctx.memory_url or None) if shares_memory(ctx.method) else \
        (run_dir(ctx).path / "memory", None)
    s = _get(("store", str(path.resolve()), url), lambda: MemoryStore(path, url=url))
    s.values.alpha = ctx.alpha
    s.ensure_seed(ctx.backend)
    return s


def generator(ctx: Context) -> Any:
    given = _given(ctx, "generator")
    if given is not None:
        return given
    from evokernel.generators.llm import make_generator

    if ctx.generator == "template":
        return _get(("generator", "template"), lambda: make_generator("template"))
    from evokernel.prompts.render import PromptOptions

    ledger = tokens(ctx)
    # the cap is also checked between retries of one attempt
    return _get(("generator", ctx.generator, ctx.temperature, ctx.strict, ctx.candidate_form, id(ledger)),
                lambda: make_generator(ctx.generator, temperature=ctx.temperature, before_call=ledger.check,
                                       prompt_options=PromptOptions(tolerance=1e-4 if ctx.strict else 1e-2),
                                       candidate_form=ctx.candidate_form))


def static_rules(ctx: Context) -> Any:
    """``check(source) -> findings``: the static anti-hack rules of the run's backend (nothing runs)."""
    def make() -> Any:
        from evokernel.verifier.backends.factory import make_backend
        from evokernel.verifier.trusted.native_build import default_cache_dir

        return make_backend(ctx.backend, default_cache_dir()).static_check

    return _get(("rules", ctx.backend), make)


_process_run_id: list[str] = []


def run_id(ctx: Context) -> str:
    """The run's id: the context's, else the LangGraph thread id (Studio, SDK and Python callers with a
    checkpointer), else one id per process. Attempt ids derive from it, so two runs never share one."""
    if ctx.run_id:
        return ctx.run_id
    try:
        from langgraph.config import get_config

        thread = (get_config().get("configurable") or {}).get("thread_id")
    except RuntimeError:  # not inside a graph run
        thread = None
    if thread:
        return str(thread)
    with _lock:
        if not _process_run_id:
            from evokernel.runtime.run_dir import new_run_id

            _process_run_id.append(new_run_id())
        return _process_run_id[0]


def run_dir(ctx: Context) -> Any:
    from evokernel.runtime.run_dir import RunDir

    rid = run_id(ctx)
    path = Path(ctx.run_dir) if ctx.run_dir else Path("runs") / rid
    return _get(("run", str(path.resolve()), rid), lambda: RunDir(path, run_id=rid))


def tokens(ctx: Context) -> Any:
    from evokernel.generators.ledger import TokenLedger

    rd = run_dir(ctx)
    return _get(("tokens", str(rd.path.resolve()), ctx.max_tokens, ctx.max_cost_usd),
                lambda: TokenLedger(rd.path / "tokens.jsonl", max_tokens=ctx.max_tokens or None,
                                    max_cost_usd=ctx.max_cost_usd or None))


_tasks: dict[tuple, Task] = {}


def task(spec: dict[str, Any]) -> Task:
    """The Task of a TaskSpec (cached: files are read once per process)."""
    key = (spec["path"], tuple(sorted((spec.get("overrides") or {}).items())), spec.get("suite"))
    with _lock:
        if key not in _tasks:
            _tasks[key] = load_task(spec["path"], spec.get("overrides") or None, spec.get("suite"))
        return _tasks[key]


def spec_of(t: Task) -> dict[str, Any]:
    """The TaskSpec of a loaded (and fitted) task: its fitted constants join the overrides."""
    return {"path": str(t.path), "overrides": dict(t.applied_overrides), "suite": t.suite, "fit": t.fit}


def fitted_spec(spec: dict[str, Any], ctx: Context) -> dict[str, Any]:
    """A spec given directly (a standalone drafting run, e.g. in Studio) fitted as the run's ``fit`` says, like
    the main graph's ``prepare`` fits its queue; a spec that already records a fit is returned as it is."""
    if "fit" in spec:
        return spec
    from evokernel.tasks.load import fit_tasks

    [fitted] = fit_tasks([task(spec)], ctx.fit, ctx.backend)
    return spec_of(fitted)


def task_id(t: Task) -> str:
    return t.task_id


def task_slots(ctx: Context) -> threading.BoundedSemaphore:
    """At most ``ctx.concurrency`` tasks of one run in flight, whatever the graph's executor does."""
    return _get(("slots", run_id(ctx), ctx.concurrency), lambda: threading.BoundedSemaphore(ctx.concurrency))


def close_all() -> None:
    """Stop verifiers and close stores (at exit, or between tests)."""
    with _lock:
        items = list(_cache.items())
        _cache.clear()
        _tasks.clear()
    for key, obj in items:
        try:
            if key[0] in ("verifier", "pool", "store"):
                obj.close()
        except Exception:
            pass


atexit.register(close_all)


def attempt_seed(run_seed: int, task_id: str, iteration: int, salt: str = "") -> int:
    """A stable per-attempt seed (same run seed, task and iteration → same choices on resume)."""
    import hashlib

    digest = hashlib.sha256(f"{run_seed}|{task_id}|{iteration}|{salt}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


def attempt_rng(run_seed: int, task_id: str, iteration: int, salt: str) -> random.Random:
    return random.Random(attempt_seed(run_seed, task_id, iteration, salt))
