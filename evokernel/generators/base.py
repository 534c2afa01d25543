"""What a generator is asked (a :class:`GenerationRequest`) and what it returns (a :class:`Generation`).

The paper's generator G_theta is frozen: it only sees the task, the retrieved context c_t, and when
refining the start point p_t with its observable children and its verifier/profile feedback. Two
implementations sit behind this interface: the LLM generator (any LangChain chat model) and the
offline ``template`` generator. The graph's ``generate`` node builds the request and never special-
cases either.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from evokernel.tasks.task import Task

DRAFT = "draft"
REFINE = "refine"


@dataclass
class ContextItem:
    """A memory item as the generator sees it.

    ``kind`` is one of seed / experience / trace / best_practice; ``text`` is what a prompt shows
    (code for traces); ``meta`` is the item's metadata (for traces: feasible, failed_gate,
    latency_ms, schedule as a JSON string, parent, task, ...).
    """

    id: str
    kind: str
    text: str
    meta: dict[str, Any] = field(default_factory=dict)

    def schedule(self) -> dict[str, Any] | None:
        """The schedule a template-generated trace was built with, if it carries one."""
        raw = self.meta.get("schedule")
        if not raw:
            return None
        try:
            value = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, dict) else None


@dataclass
class GenerationRequest:
    task: Task
    stage: str  # DRAFT or REFINE
    backend: str = "cpu"
    iteration: int = 0  # attempts already spent on this task (0-based index of this attempt)
    seed: int = 0  # per-attempt seed (run seed, task and iteration folded in)
    context: list[ContextItem] = field(default_factory=list)  # value-selected items (c_t)
    knowledge: list[ContextItem] = field(default_factory=list)  # seed API knowledge (non-learned path)
    start_point: ContextItem | None = None  # refining: the kernel to improve (text = its source)
    children: list[ContextItem] = field(default_factory=list)  # refining: earlier variants of the start point
    last_feedback: str | None = None  # verifier feedback of this task's previous attempt, if it failed
    best_latency_ms: float | None = None  # refining: the task's best-so-far latency b_t
    profile: str | None = None  # refining: the start point's profile / verifier feedback text


@dataclass
class Generation:
    source: str  # the candidate file, in the backend's candidate format
    reply: str = ""  # raw model reply (LLM) or a description of what was built (template)
    summary: str = ""  # one line: what this attempt tried (becomes the experience text)
    schedule: dict[str, Any] | None = None  # template generator: the schedule it applied
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    model: str = ""  # generator/model identity recorded with the trace
    calls: int = 1  # endpoint calls made (retries included)
    # LangChain's usage details summed over the attempt's requests, when the endpoint gave any:
    # {"input": {"cache_read": ..., ...}, "output": {"reasoning": ...}}
    usage_details: dict[str, dict[str, int]] | None = None


class GenerationError(Exception):
    """The generator ran but produced no usable candidate (e.g. a reply without code).

    The attempt still counts against the budget and gets a drafting/refining reward of -1; the
    message becomes the feedback of the attempt. ``reply`` keeps the raw reply for the trace.
    """

    def __init__(self, message: str, reply: str = "", tokens_in: int = 0, tokens_out: int = 0,
                 cost_usd: float = 0.0):
        super().__init__(message)
        self.reply = reply
        self.tokens_in = tokens_in
        self.tokens_out = tokens_out
        self.cost_usd = cost_usd


def utf8_text(text: str) -> str:
    """``text`` as UTF-8 can hold it: a surrogate pair joined into its character, a lone surrogate (a model's JSON
    reply decodes ``"\\ud800"`` to one) replaced by U+FFFD. Every reply a model sends is read through this, so no
    prompt, trace, store or hash meets one (red team rt7_lone_surrogate_kills_tool_node)."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def not_utf8(source: str) -> str:
    """Why ``source`` cannot be a candidate file ('' when it can): a lone UTF-16 surrogate (a model's JSON reply
    decodes ``"\\ud800"`` to one) is text no file, hash or store can hold as UTF-8 (red team rt7)."""
    try:
        source.encode("utf-8")
    except UnicodeEncodeError as exc:
        line = source.count("\n", 0, exc.start) + 1
        return (f"the code holds a character UTF-8 cannot encode ({source[exc.start]!r}, a lone UTF-16 surrogate, "
                f"at line {line}): write the candidate as plain UTF-8 text")
    return ""


class BudgetExceeded(Exception):
    """The run's token or cost cap is reached: the run stops cleanly, keeping everything so far."""


@runtime_checkable
class Generator(Protocol):
    name: str  # recorded as the trace's source model, e.g. "template" or "openai:gpt-4o-mini"

    def generate(self, request: GenerationRequest) -> Generation: ...
