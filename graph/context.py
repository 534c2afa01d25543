"""Run settings: the runtime context schema of every EvoKernel graph.

Static, per-run settings live here (``graph.invoke(inp, cfg, context=Context(...))``, or ``context={...}`` over
the LangGraph server, where Studio shows these fields as the assistant's configuration form). They are declared
once, with their types, defaults and help, in :mod:`evokernel.settings` (``RunSettings``, which ``Context``
extends); the CLI's options and the eval config's run section come from the same declaration, so a setting has
one name and one default everywhere. Evolving data lives in the state (:mod:`evokernel.graph.state`).

The run's heavy dependencies travel in the context too: a Python caller passes its own verifier, memory
store, generator or LLM judge as ``Context(resources=Resources(verifier=..., generator=...))`` and every
node and tool uses those; whatever is not given (and everything over the server, whose contexts are JSON)
is built from the settings once per process (:mod:`evokernel.graph.resources`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evokernel.memory.retrieval import LinearSchedule
from evokernel.settings import SEED_KNOWLEDGE, RunSettings, SettingsError

__all__ = ["Context", "Resources", "RunSettings", "SEED_KNOWLEDGE", "SettingsError"]


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
class Context(RunSettings):
    """The run settings (:class:`evokernel.settings.RunSettings`, declared there once) and the run's Python objects."""

    resources: Any = field(default=None, compare=False, repr=False, metadata={
        "description": "Python callers only: a graph.context.Resources with the run's own verifier, store, generator "
                       "or judge (leave empty over the server)",
        "python_only": "Python objects (a started verifier, a store, a generator): no command line or JSON carries them",
        "eval": "none: each unit builds its own from its settings"})

    def __post_init__(self) -> None:
        if self.resources is not None and not isinstance(self.resources, Resources):
            raise ValueError("resources must be a graph.context.Resources (objects given in Python; a JSON context "
                             f"cannot carry them), got {type(self.resources).__name__}")
        super().__post_init__()

    @property
    def lam(self) -> LinearSchedule:
        return LinearSchedule(self.lambda_start, self.lambda_end, self.lambda_steps)

    @property
    def epsilon(self) -> LinearSchedule:
        return LinearSchedule(self.epsilon_start, self.epsilon_end, self.epsilon_steps)
