"""State schemas of the EvoKernel graphs (typing_extensions.TypedDict, so Studio gets a JSON schema).

``TaskState`` is what the drafting and refining subgraphs share: the per-task generation state ξ_t
of the paper (attempts used, feasibility, best-so-far latency b_t, the start-point set P(x)) plus the
data one attempt passes from node to node (pool → context → candidate → verdict). ``RunState``
adds the task stream of the outer graph. ``messages`` holds the attempt's exchange with the verifier's tool node
(the candidate submitted as a tool call, the tool's answer). Only ``done`` has an additive reducer (the results of tasks
run side by side, each written once by its ``solve_task``); every other key is written whole, so
nothing is appended twice when a subgraph's state flows back into its parent.
"""
from __future__ import annotations

import operator
from typing import Annotated, Any

from langchain_core.messages import AnyMessage
from typing_extensions import NotRequired, TypedDict


class TaskSpec(TypedDict):
    """Where a task comes from: its file, its size overrides (the user's and the fitted ones), its suite
    (if built in), and what the size fit changed (``Task.fit``)."""

    path: str
    overrides: NotRequired[dict[str, Any]]
    suite: NotRequired[str | None]
    fit: NotRequired[dict[str, Any] | None]


class StartPoint(TypedDict):
    """A member of P(x): a feasible kernel of the task (a trace item id) and its latency."""

    id: str
    latency_ms: float
    iteration: int


class PoolEntry(TypedDict):
    """An item Chroma proposed for this attempt, with its similarity to the task."""

    id: str
    similarity: float


class Candidate(TypedDict, total=False):
    """What ``generate`` produced: the candidate source, or the reason there is none."""

    source: str
    code_hash: str
    summary: str
    schedule: dict[str, Any] | None
    model: str
    reply: str
    error: str  # generation failed: no candidate, this becomes the attempt's feedback
    tokens_in: int
    tokens_out: int
    cost_usd: float
    usage_details: dict[str, dict[str, int]]  # LangChain usage details (cache reads, reasoning tokens), if any


class TaskState(TypedDict, total=False):
    task: TaskSpec  # the task being worked on
    task_id: str  # its id in memory and in the run log ("suite/name" or the file stem)
    iteration: int  # attempts spent on this task so far (budget T counts these)
    feasible: bool  # a feasible kernel exists (drafting is over)
    first_feasible_iteration: int | None
    first_latency_ms: float | None
    best_latency_ms: float | None  # b_t
    best_id: str | None  # trace id of the best kernel
    eager_ms: float | None  # the reference's eager latency, from the verdicts
    start_points: list[StartPoint]  # P(x)
    start_point: str | None  # refining: the chosen p_t
    pool: list[PoolEntry]  # retrieve → q_filter
    context: list[str]  # item ids chosen by q_filter (c_t)
    knowledge: list[str]  # seed items fetched by the non-learned path
    candidate: Candidate  # generate → verify
    messages: list[AnyMessage]  # generate → verify: the candidate as a verify_kernel tool call, then the tool's
    # answer (written whole each attempt: the state keeps one exchange, not the run's every source)
    verdict: dict[str, Any]  # verify → update
    last_feedback: str | None  # feedback of the previous failed attempt
    attempts: int  # attempts recorded in the run log for this task (== iteration after update)
    stop: str | None  # set when the run must stop (token/cost cap); every loop ends


class RunState(TaskState, total=False):
    tasks: list[str]  # input: task files, directories or suite names
    overrides: dict[str, Any]  # input: size overrides applied to every task that defines the constant
    limit: int  # input: only the first N tasks (0: all)
    fit: str | None  # refused: the size fit is a run setting (Context.fit); kept so an old input is told so
    queue: list[TaskSpec]  # tasks still to do (the current one first)
    results: list[dict[str, Any]]  # one summary per finished task
    done: Annotated[list[dict[str, Any]], operator.add]  # concurrency > 1: summaries of the tasks run side by side


class RunInput(TypedDict, total=False):
    """What a run is asked to do: task files, directories or suite names (e.g. ["cpu-l1"])."""

    tasks: list[str]
    overrides: dict[str, Any]
    limit: int
    fit: str | None  # refused with a clear error: the size fit is a run setting (Context.fit, default "auto")
