"""Run settings, declared once: name, type, default, help and the entry points that expose each.

Every per-run setting of EvoKernel is a field of :class:`RunSettings`. The rest of the project reads this
declaration instead of repeating it:

* Python and LangGraph Studio: the runtime context :class:`evokernel.graph.context.Context` *is* these
  settings plus the run's Python objects (``resources``);
* the command line: ``evokernel run`` gets one option per setting, generated from the fields (the option's
  name is the field's with dashes, its help the field's help, its default the field's default;
  :mod:`evokernel.cli.options`); ``evokernel verify`` and ``evokernel eval`` take the ones they use the same way;
* the eval config (:mod:`evokernel.evals.config`): its run section is the settings whose ``eval`` role is
  ``"run"``, validated here; the others the eval harness sets per unit (the role says how), and it hands
  each unit its settings as a file (``evokernel run --settings FILE``), not as flags.

A field with a ``python_only`` reason is not a command-line option (an object, or a pause only Studio
or Python can answer). ``flags`` are further spellings of its option: short forms, and old spellings
kept for the docs and scripts that use them.

This module imports nothing heavy: the CLI builds its options from it at start-up.
"""
from __future__ import annotations

import json
import os
import tomllib
import functools
import typing
from dataclasses import MISSING, Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from evokernel.graph.methods import METHODS
from evokernel.tasks.task import FIT_MODES

SEED_KNOWLEDGE = ("all", "format")
CANDIDATE_FORMS = ("auto", "kernel", "full")  # evokernel.generators.llm.CANDIDATE_FORMS (kept light here)
EVAL_RUN = "run"  # the eval role of a setting the eval config sets for all its runs (its run section)
INPUTS = ("tasks", "set", "limit")  # what a settings file may hold besides settings: the run's input


class SettingsError(ValueError):
    """A settings file or value that cannot be used; the message names the setting (``setting``: its name)."""

    def __init__(self, message: str, setting: str = ""):
        super().__init__(message)
        self.setting = setting


def setting(default: Any, help: str, *, eval: str = EVAL_RUN, flags: tuple[str, ...] = (),
            python_only: str = "") -> Any:
    """One run setting. ``eval``: ``"run"`` (the eval config's run section) or how the eval harness sets it
    for each unit; ``flags``: more spellings of its command-line option; ``python_only``: why it has none."""
    return field(default=default, metadata={"description": help, "eval": eval, "flags": tuple(flags),
                                            "python_only": python_only})


@dataclass(kw_only=True)
class RunSettings:
    """Every per-run setting (see the module docstring). Invalid values raise :class:`SettingsError`."""

    method: str = setting("evokernel", "evokernel (the paper's system), passk (T independent samples, one "
                                       "demonstration, no memory) or refinement (repair, then hill-climb; no "
                                       "shared memory)", eval="one group per entry of `methods`")
    backend: str = setting("cpu", "target backend whose verifier judges every candidate: cpu (C++ kernels, measured "
                                  "latency), ascend-sim (Ascend C on the CPU emulator, latency ESTIMATED by a model "
                                  "of Ascend 910B) or ascend (Ascend C built with CANN and measured on a real NPU; "
                                  "docs/ascend.md)")
    generator: str = setting("template", "template (offline, deterministic) or an LLM spec: PROVIDER:MODEL for any "
                                         "LangChain provider (openai, anthropic, google_genai, bedrock_converse, "
                                         "mistralai, groq, deepseek, ollama, vllm, ...), local:NAME or local:PATH.gguf "
                                         "(a managed llama.cpp server), hybrid:SPEC (the template drafts, SPEC "
                                         "refines), or a bare MODEL for OPENAI_BASE_URL (docs/generators.md)",
                             eval="one group per model of `models` (generator llm), else template")
    candidate_form: str = setting("auto", "what an LLM writes on the cpu backend: kernel (one C++ function of a "
                                          "signature declared from the task; the glue is generated), full (the "
                                          "whole candidate file) or auto (kernel for local models, full for others)")
    temperature: float = setting(0.7, "sampling temperature of an LLM generator")
    budget: int = setting(30, "T: attempts per task, shared by drafting and refining", flags=("-T",))
    fit: str = setting("auto", "auto: scale each task's size constants down until it fits the backend's memory and "
                               "time budget (KernelBench sizes are for GPUs; one line per task says what changed; "
                               "`set` values are kept); none: the sizes as written (a task too large for the "
                               "machine is then refused at load)")
    alpha: float = setting(0.1, "step size α of the Monte-Carlo value update Q <- Q + α (r - Q)")
    n_context: int = setting(4, "N: memory items put in the generator's context")
    lambda_start: float = setting(2.0, "over-retrieval multiplier λ at a task's first attempt (pool K = λ·N)")
    lambda_end: float = setting(30.0, "λ after lambda_steps attempts")
    lambda_steps: int = setting(20, "attempts over which λ moves linearly from start to end")
    epsilon_start: float = setting(0.3, "ε of the ε-greedy selection at a task's first attempt")
    epsilon_end: float = setting(0.05, "ε after epsilon_steps attempts")
    epsilon_steps: int = setting(20, "attempts over which ε moves linearly from start to end")
    policy: str = setting("value", "retrieval policy: value (paper), similarity, random or none",
                          eval="one group per entry of `policies` (evokernel)")
    relevance_margin: float = setting(0.0, "drafting retrieves only items whose similarity is within this margin of "
                                           "the best hit (0: off, the paper's top-K); e.g. 0.1 keeps avg_pool2d for "
                                           "max_pool2d but drops conv2d")
    seed_knowledge: str = setting("all", "seed API knowledge in the prompt: all (the candidate format, then items "
                                         "matching the chosen code's APIs and the task's category) or format (the "
                                         "candidate-format item only; with policy none: a run with no memory at all)",
                                  eval="format for memory mode none, else all")
    seed: int = setting(0, "seed of every random choice of the run (ε-greedy, template generator)",
                        eval="one arm per entry of `seeds`")
    memory_dir: str = setting("", "memory directory (Chroma + value ledger), shared across runs [default: "
                                  "$EVOKERNEL_MEMORY or ./evokernel-memory]", flags=("--memory",),
                              eval="the arm's memory directory (by memory mode)")
    memory_url: str = setting("", "Chroma server URL (chroma run) for a memory shared by several processes "
                                  "[default: $EVOKERNEL_CHROMA_URL]",
                              eval="the arm's Chroma server when its stream runs in shards (memory_server)")
    run_dir: str = setting("", "run directory (attempts.jsonl, summary.json, best kernels) [default: "
                               "./runs/<run id>]", eval="the unit's run directory")
    run_id: str = setting("", "run identifier; attempt ids and memory provenance use it [default: a new one; in "
                              "Python and Studio the LangGraph thread id]", eval="a new one per unit")
    strict: bool = setting(False, "strict correctness tolerance atol=rtol=1e-4 (default 1e-2, the paper's)")
    compile_baseline: bool = setting(False, "also time torch.compile of the reference in the same rounds as eager "
                                            "(speedup vs torch.compile; slow: +8-20 s per feasible verdict)")
    recall: bool = setting(True, "a task's first attempt re-submits the fastest kernel an earlier run on this memory "
                                 "found for the same task and sizes (judged again; P(x) starts from it); off: draft "
                                 "from scratch", eval="off: each arm measures what it finds itself")
    review: bool = setting(False, "pause for a human (interrupt, shown in Studio) on a verdict too good to be true: "
                                  "a CPU kernel beyond its memory roof, or 20x over eager; resume accepts or refuses it",
                           eval="off (nobody answers the pause)",
                           python_only="the pause is answered by resuming the graph (Studio or Python); the "
                                       "command line has no one to ask")
    llm_judge: str = setting("", "second tier of the hack gate: an LLM spec (e.g. local:qwen2.5-coder-1.5b) whose "
                                 "model reads every feasible candidate beside its reference and may flag semantic "
                                 "cheating (empty: off; docs/verifier.md)")
    llm_experiences: bool = setting(True, "with an LLM generator, the model writes the experience stored after each "
                                          "attempt (what was tried, what happened, the lesson; the template sentence "
                                          "when the call fails, times out or returns junk); off: the template "
                                          "sentence (docs/memory.md)")
    distil_every: int = setting(5, "with an LLM generator, distil best practices from the refinements not yet "
                                   "distilled once this many successful ones (>= distil_min_gain over their start "
                                   "point) are pending (0: never; the template generator never distils)")
    distil_min_gain: float = setting(1.05, "a refinement counts as successful for distillation from this speedup "
                                           "over its start point")
    distil_dedup: float = setting(0.9, "a distilled practice whose key is at least this cosine-similar to an "
                                       "existing best practice is merged into it (learned) or skipped (seed)")
    learn_timeout: float = setting(300.0, "seconds an experience or distillation call may take before the fallback "
                                          "(a local 1.5B model on 2 loaded cores took 124 s for one summary)")
    concurrency: int = setting(1, "K: tasks of the stream in flight at once, sharing the memory; K > 1 judges "
                                  "candidates on a pool of K warm verifier actors on Ray (docs/scale-out.md: a run "
                                  "with K > 1 is not reproducible from its seed alone)")
    ray: str = setting("auto", "where the verifier pool runs when concurrency > 1: auto ($RAY_ADDRESS, else a "
                               "private local Ray), local, or a cluster address HOST:PORT",
                       eval="the eval's own Ray (its `ray`), for units with concurrency > 1")
    max_tokens: int = setting(0, "stop the run cleanly once the LLM used this many tokens (0: no cap)")
    max_cost_usd: float = setting(0.0, "stop the run cleanly once the LLM cost this many US dollars (0: no cap)")

    def __post_init__(self) -> None:
        self.validate()
        self.memory_dir = self.memory_dir or os.environ.get("EVOKERNEL_MEMORY", "") or "evokernel-memory"
        self.memory_url = self.memory_url or os.environ.get("EVOKERNEL_CHROMA_URL", "")

    def validate(self) -> None:
        """Every value in range and of the right kind; :class:`SettingsError` names the first that is not."""
        hints = _hints()
        for f in setting_fields():
            value = getattr(self, f.name)
            kind = hints[f.name]
            ok = isinstance(value, kind) and not (kind is not bool and isinstance(value, bool))
            if kind is float and isinstance(value, int) and not isinstance(value, bool):
                setattr(self, f.name, float(value))  # 1 means 1.0
                ok = True
            if not ok:
                raise SettingsError(f"{f.name} must be {kind.__name__}, got {value!r}", f.name)
        choices = {"method": METHODS, "policy": _policies(), "seed_knowledge": SEED_KNOWLEDGE, "fit": FIT_MODES,
                   "candidate_form": CANDIDATE_FORMS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise SettingsError(f"unknown {name} {getattr(self, name)!r} (one of {', '.join(allowed)})", name)
        ranges = [("budget", 1, None), ("concurrency", 1, None), ("n_context", 0, None), ("distil_every", 0, None),
                  ("max_tokens", 0, None), ("max_cost_usd", 0, None), ("temperature", 0, None),
                  ("relevance_margin", 0, 2), ("distil_min_gain", 1, None), ("lambda_start", 1, None),
                  ("lambda_end", 1, None), ("epsilon_start", 0, 1), ("epsilon_end", 0, 1),
                  ("lambda_steps", 0, None), ("epsilon_steps", 0, None)]
        for name, lo, hi in ranges:
            v = getattr(self, name)
            if v < lo or (hi is not None and v > hi):
                raise SettingsError(f"{name} must be " + (f"in [{lo}, {hi}]" if hi is not None else f">= {lo}")
                                    + f", got {v}", name)
        for name in ("alpha", "distil_dedup"):  # (0, 1]
            if not 0 < getattr(self, name) <= 1:
                raise SettingsError(f"{name} must be in (0, 1], got {getattr(self, name)}", name)
        if self.learn_timeout <= 0:
            raise SettingsError(f"learn_timeout must be > 0 seconds, got {self.learn_timeout}", "learn_timeout")
        if not self.generator.strip():
            raise SettingsError("generator must be template or an LLM spec, got an empty string", "generator")

    def settings(self) -> dict[str, Any]:
        """The JSON settings (every declared setting): what a run directory records."""
        return {f.name: getattr(self, f.name) for f in setting_fields()}

    @classmethod
    def coerce(cls, value: Any) -> Any:
        """An instance of ``cls`` from an instance, a dict (the server passes dicts) or None (all defaults)."""
        if isinstance(value, cls):
            return value
        known = {f.name for f in fields(cls)}
        data = dict(value or {})
        unknown = sorted(set(data) - known)
        if unknown:
            raise SettingsError(f"unknown run setting(s): {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        return cls(**data)


def setting_fields() -> list[Field]:
    """The declared settings, in declaration order."""
    return list(fields(RunSettings))


def cli_fields() -> list[Field]:
    """The settings that are command-line options (all but the ``python_only`` ones)."""
    return [f for f in setting_fields() if not f.metadata["python_only"]]


def eval_run_fields() -> list[Field]:
    """The settings of the eval config's run section (one value for every run of the eval)."""
    return [f for f in setting_fields() if f.metadata["eval"] == EVAL_RUN]


def default_of(f: Field) -> Any:
    return f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]


def type_of(name: str) -> type:
    return _hints()[name]


@functools.cache
def _hints() -> dict[str, type]:  # cached: the CLI asks once per option (0.15 s of every command's start-up)
    return typing.get_type_hints(RunSettings)


def _policies() -> tuple[str, ...]:
    from evokernel.memory.retrieval import POLICIES  # lazy: the memory package loads numpy: only when validating

    return POLICIES


def read_settings_file(path: str | Path) -> dict[str, Any]:
    """A settings file (``.json`` or ``.toml``): run settings by name, and optionally the run's input
    (``tasks``, ``set``, ``limit``). Unknown names are an error; values are checked when the run is built."""
    p = Path(path)
    try:
        text = p.read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise SettingsError(f"cannot read settings file {p}: {e}") from None
    try:
        if p.suffix.lower() == ".toml":
            data = tomllib.loads(text)
        elif p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            raise SettingsError(f"{p}: settings files are .json or .toml")
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as e:
        raise SettingsError(f"{p}: not valid {p.suffix.lower().lstrip('.').upper()}: {e}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{p}: the top level must be a mapping of settings, not {type(data).__name__}")
    known = {f.name for f in cli_fields()}
    unknown = sorted(set(data) - known - set(INPUTS))
    if unknown:
        raise SettingsError(f"{p}: unknown setting(s) {', '.join(unknown)} "
                            f"(known: {', '.join(sorted(known))}; input: {', '.join(INPUTS)})")
    return data


def write_settings_file(path: str | Path, data: dict[str, Any]) -> Path:
    """Write a settings file (JSON) atomically; what :func:`read_settings_file` reads back."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    os.replace(tmp, p)
    return p
