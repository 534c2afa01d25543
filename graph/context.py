"""Run settings: the runtime context schema of every EvoKernel graph.

Static, per-run settings live here (``graph.invoke(inp, cfg, context=Context(...))``, or
``context={...}`` over the LangGraph server, where Studio shows these fields as the assistant's
configuration form). Evolving data lives in the state (:mod:`evokernel.graph.state`).

The run's heavy dependencies travel in the context too: a Python caller passes its own verifier, memory
store, generator or LLM judge as ``Context(resources=Resources(verifier=..., generator=...))`` and every
node and tool uses those; whatever is not given (and everything over the server, whose contexts are JSON)
is built from the settings once per process (:mod:`evokernel.graph.resources`).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any

from evokernel.memory.retrieval import DEFAULT_EPSILON, DEFAULT_LAMBDA, POLICIES, LinearSchedule


SEED_KNOWLEDGE = ("all", "format")


def _f(default, description: str):
    return field(default=default, metadata={"description": description})


@dataclass(kw_only=True)
class Resources:
    """Objects a Python caller hands to the nodes through the runtime context (None: built from the settings).

    ``verifier``: a started Verifier (or VerifierService / VerifierPool: anything with ``verify(task, source)``);
    ``store``: a MemoryStore; ``generator``: any Generator; ``judge``: an LLMJudge (used when ``llm_judge`` is set).
    """
    verifier: Any = None
    store: Any = None
    generator: Any = None
    judge: Any = None


@dataclass(kw_only=True)
class Context:
    method: str = _f("evokernel", "evokernel (the paper's system), passk (T independent samples) or refinement "
                                  "(repair, then hill-climb; no shared memory)")
    backend: str = _f("cpu", "target backend whose verifier judges every candidate")
    generator: str = _f("template", "'template' (offline) or an LLM spec: 'PROVIDER:MODEL' for any LangChain "
                                    "provider (openai, anthropic, google_genai, bedrock, mistralai, groq, ...), "
                                    "'local:NAME' (a llama.cpp server here), 'hybrid:SPEC', or a bare model name "
                                    "for OPENAI_BASE_URL (docs/generators.md)")
    temperature: float = _f(0.7, "sampling temperature of an LLM generator")
    budget: int = _f(30, "T: attempts per task, shared by drafting and refining")
    alpha: float = _f(0.1, "step size of the Monte-Carlo value update Q <- Q + alpha (r - Q)")
    n_context: int = _f(4, "N: memory items put in the generator's context")
    lambda_start: float = _f(DEFAULT_LAMBDA.start, "over-retrieval multiplier λ at a task's first attempt (pool K = λ·N)")
    lambda_end: float = _f(DEFAULT_LAMBDA.end, "λ after lambda_steps attempts")
    lambda_steps: int = _f(DEFAULT_LAMBDA.steps, "attempts over which λ moves linearly from start to end")
    epsilon_start: float = _f(DEFAULT_EPSILON.start, "ε of the ε-greedy selection at a task's first attempt")
    epsilon_end: float = _f(DEFAULT_EPSILON.end, "ε after epsilon_steps attempts")
    epsilon_steps: int = _f(DEFAULT_EPSILON.steps, "attempts over which ε moves linearly from start to end")
    policy: str = _f("value", "retrieval policy: value (paper), similarity, random or none")
    relevance_margin: float = _f(0.0, "drafting retrieves only items whose similarity is within this margin of "
                                      "the best hit (0: off, the paper's top-K); e.g. 0.1 keeps avg_pool2d for "
                                      "max_pool2d but drops conv2d")
    seed_knowledge: str = _f("all", "seed API knowledge in the prompt: all (the candidate format, then items "
                                    "matching the chosen code's APIs and the task's category) or format (the "
                                    "candidate-format item only: a run with no memory at all)")
    seed: int = _f(0, "seed of every random choice of the run (ε-greedy, template generator)")
    memory_dir: str = _f("", "memory directory (Chroma + value ledger); default $EVOKERNEL_MEMORY or ./evokernel-memory")
    memory_url: str = _f("", "Chroma server URL (chroma run) shared by several processes; default $EVOKERNEL_CHROMA_URL")
    run_dir: str = _f("", "run directory (attempts.jsonl, summary.json, best kernels); default ./runs/<run id>")
    run_id: str = _f("", "run identifier; attempt ids and memory provenance use it (default: the LangGraph thread id)")
    strict: bool = _f(False, "strict correctness tolerance (1e-4 instead of the paper's 1e-2)")
    compile_baseline: bool = _f(False, "also time torch.compile of the reference in the same rounds as eager "
                                       "(speedup vs torch.compile; slow: +8-20 s per feasible verdict)")
    recall: bool = _f(True, "a task's first attempt re-submits the fastest kernel an earlier run on this memory found "
                            "for the same task and sizes (judged again; P(x) starts from it); off: draft from scratch")
    review: bool = _f(False, "pause for a human (interrupt, shown in Studio) on a verdict too good to be true: a CPU "
                             "kernel beyond its memory roof, or 20x over eager; resume accepts or refuses it")
    llm_judge: str = _f("", "second tier of the hack gate: an LLM spec whose model reads every feasible "
                            "candidate beside its reference and may flag semantic cheating ('' : off)")
    llm_experiences: bool = _f(True, "with an LLM generator, the model writes the experience stored after each attempt "
                                     "(what was tried, what happened, the lesson; the template sentence when the call "
                                     "fails, times out or returns junk); off: the template sentence (docs/memory.md)")
    distil_every: int = _f(5, "with an LLM generator, distil best practices from the refinements not yet distilled "
                              "once this many successful ones (>= distil_min_gain over their start point) are "
                              "pending (0: never; the template generator never distils)")
    distil_min_gain: float = _f(1.05, "a refinement counts as successful for distillation from this speedup over its "
                                      "start point")
    distil_dedup: float = _f(0.9, "a distilled practice whose key is at least this cosine-similar to an existing best "
                                  "practice is merged into it (learned) or skipped (seed)")
    learn_timeout: float = _f(300.0, "seconds an experience or distillation call may take before the fallback (a "
                                     "local 1.5B model on 2 loaded cores took 124 s for one summary)")
    concurrency: int = _f(1, "K: tasks of the stream in flight at once, sharing the memory; K > 1 judges candidates "
                             "on a pool of K warm verifier actors on Ray (docs/scale-out.md: what changes in ordering)")
    ray: str = _f("auto", "where the verifier pool runs when concurrency > 1: auto ($RAY_ADDRESS, else a private "
                          "local Ray), local, or a cluster address HOST:PORT")
    max_tokens: int = _f(0, "stop the run cleanly once the LLM used this many tokens (0: no cap)")
    max_cost_usd: float = _f(0.0, "stop the run cleanly once the LLM cost this much (0: no cap)")
    resources: Any = field(default=None, compare=False, repr=False, metadata={
        "description": "Python callers only: a graph.context.Resources with the run's own verifier, store, generator "
                       "or judge (leave empty over the server)"})

    def __post_init__(self) -> None:
        from evokernel.graph.methods import check

        check(self.method)
        if self.resources is not None and not isinstance(self.resources, Resources):
            raise ValueError("resources must be a graph.context.Resources (objects given in Python; a JSON context "
                             f"cannot carry them), got {type(self.resources).__name__}")
        if self.policy not in POLICIES:
            raise ValueError(f"unknown retrieval policy {self.policy!r} (one of {', '.join(POLICIES)})")
        if self.seed_knowledge not in SEED_KNOWLEDGE:
            raise ValueError(f"unknown seed_knowledge {self.seed_knowledge!r} (one of {', '.join(SEED_KNOWLEDGE)})")
        if not 0 <= self.relevance_margin <= 2:
            raise ValueError(f"relevance_margin must be in [0, 2] (cosine similarities), got {self.relevance_margin}")
        if self.budget < 1:
            raise ValueError(f"budget must be >= 1, got {self.budget}")
        if self.concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {self.concurrency}")
        if self.distil_every < 0:
            raise ValueError(f"distil_every must be >= 0 (0: off), got {self.distil_every}")
        if self.distil_min_gain < 1:
            raise ValueError(f"distil_min_gain must be >= 1 (a speedup over the start point), got {self.distil_min_gain}")
        if not 0 < self.distil_dedup <= 1:
            raise ValueError(f"distil_dedup must be in (0, 1] (a cosine similarity), got {self.distil_dedup}")
        if self.learn_timeout <= 0:
            raise ValueError(f"learn_timeout must be > 0 seconds, got {self.learn_timeout}")
        if self.n_context < 0:
            raise ValueError(f"n_context must be >= 0, got {self.n_context}")
        if not 0 < self.alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")
        if self.lambda_start < 1 or self.lambda_end < 1:
            raise ValueError("λ must be >= 1")
        for name in ("epsilon_start", "epsilon_end"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1]")
        self.memory_dir = self.memory_dir or os.environ.get("EVOKERNEL_MEMORY", "") or "evokernel-memory"
        self.memory_url = self.memory_url or os.environ.get("EVOKERNEL_CHROMA_URL", "")

    def settings(self) -> dict[str, Any]:
        """The JSON settings (every field but ``resources``): what a run directory records."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "resources"}

    @property
    def lam(self) -> LinearSchedule:
        return LinearSchedule(self.lambda_start, self.lambda_end, self.lambda_steps)

    @property
    def epsilon(self) -> LinearSchedule:
        return LinearSchedule(self.epsilon_start, self.epsilon_end, self.epsilon_steps)

    @classmethod
    def coerce(cls, value: "Context | dict | None") -> "Context":
        """A Context from a Context, a dict (the server passes dicts) or None (all defaults)."""
        if isinstance(value, Context):
            return value
        known = {f.name for f in fields(cls)}
        data = dict(value or {})
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown run setting(s): {', '.join(unknown)}")
        return cls(**data)
