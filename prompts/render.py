"""Render a :class:`GenerationRequest` into chat messages from the template files of this package.

Templates live in one folder per backend family (``cpu/system.md``, ``cpu/draft.md``, ``cpu/refine.md``;
``ascend/`` serves both ascend-sim and ascend, see `evokernel.verifier.backends.registry`) and use :class:`string.Template`
placeholders (``$name``; a literal dollar is ``$$``). Every template may use ``$backend`` (the backend's
own name) and ``$target`` (the optional ``<family>/target-<backend>.md``: what differs between the
backends of a family, e.g. emulated vs measured latency). The system template (also ``$tolerance``)
teaches the candidate format; the draft/refine templates lay out the task, the retrieved context and,
when refining, the start point with its children and feedback. Everything variable is rendered here
into whole sections (a section with nothing to show renders as an empty string), so the templates
stay plain text that can be edited without touching code.

Rendering is bounded: every item is cut to ``max_item_chars``, the retrieved context, knowledge and
children together get at most ``max_context_chars`` (items that do not fit are left out and counted),
code (reference, start point) is cut to ``max_code_chars`` and feedback/profile text to
``max_feedback_chars``.
"""
from __future__ import annotations

import math
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from evokernel.generators.base import REFINE, ContextItem, GenerationRequest
from evokernel.verifier.backends.registry import family

__all__ = ["PromptOptions", "adapt_foreign_code", "backends", "load_template", "render_messages", "render_prompt", "target_notes",
           "truncate"]

TEMPLATE_NAMES = ("system", "draft", "refine")
# the kernel-only form (evokernel.generators.kernel_form): the model writes one declared C++ function
KERNEL_TEMPLATE_NAMES = ("kernel-system", "kernel-draft", "kernel-refine")

# the order context kinds are shown in, with their section titles
KIND_TITLES = {
    "knowledge": "API knowledge",
    "seed": "Reference notes",
    "best_practice": "Best practices",
    "experience": "Experiences from earlier attempts",
    "trace": "Earlier candidates (traces) and their outcomes",
}


@dataclass(frozen=True)
class PromptOptions:
    """Bounds and knobs of rendering (characters, not tokens: ~4 characters per token)."""

    max_context_chars: int = 24_000  # retrieved context + knowledge + children, all together
    max_item_chars: int = 6_000  # one context item, child or trace (code included); a median template draft is 4.4k
    max_code_chars: int = 24_000  # the reference source and the start point's source, each
    max_feedback_chars: int = 3_000  # last feedback, profile text, a trace's feedback
    tolerance: float = 1e-2  # shown in the system prompt (the verifier's atol = rtol)


def backends() -> list[str]:
    """Template folders (one per backend family: ``ascend`` serves ascend-sim and ascend)."""
    root = resources.files("evokernel.prompts")
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "system.md").is_file())


def load_template(backend: str, name: str) -> string.Template:
    """The template ``<family of backend>/<name>.md`` of this package."""
    if name not in TEMPLATE_NAMES + KERNEL_TEMPLATE_NAMES:
        names = ", ".join(TEMPLATE_NAMES + KERNEL_TEMPLATE_NAMES)
        raise ValueError(f"unknown prompt template {name!r} (expected one of {names})")
    path = resources.files("evokernel.prompts") / family(backend) / f"{name}.md"
    if not path.is_file():
        raise FileNotFoundError(
            f"no prompt template {family(backend)}/{name}.md in evokernel.prompts "
            f"(backends with templates: {', '.join(backends()) or 'none'})"
        )
    return string.Template(path.read_text(encoding="utf-8"))


def target_notes(backend: str) -> str:
    """What differs between the backends of one family (how candidates are run and timed), from the
    optional ``<family>/target-<backend>.md``; substituted as ``$target`` (empty when there is none)."""
    path = resources.files("evokernel.prompts") / family(backend) / f"target-{backend}.md"
    return path.read_text(encoding="utf-8").strip() if path.is_file() else ""


def truncate(text: str, limit: int, what: str = "characters") -> str:
    """``text`` cut to about ``limit`` characters, keeping its head and tail with a marker between."""
    text = text or ""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    marker = f"\n... [{len(text) - limit} {what} cut] ...\n"
    keep = max(limit - len(marker), 0)
    head = (keep * 2) // 3
    tail = keep - head
    return text[:head] + marker + (text[len(text) - tail:] if tail else "")


def _fence(text: str, lang: str = "") -> str:
    """``text`` in a fenced block whose fence is longer than any backtick run inside it."""
    longest, run = 0, 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text.rstrip()}\n{fence}"


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)):
        return bool(value)
    if isinstance(value, str):
        low = value.strip().lower()
        if low in {"true", "yes", "1", "passed", "feasible"}:
            return True
        if low in {"false", "no", "0", "failed"}:
            return False
    return None


def _as_float(value: Any) -> float | None:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _ms(value: Any) -> str | None:
    f = _as_float(value)
    return None if f is None else f"{f:.4g} ms"


def _outcome(meta: dict[str, Any]) -> str:
    """``passed, 1.234 ms`` / ``failed at correctness`` from an item's metadata."""
    parts: list[str] = []
    feasible = _as_bool(meta.get("feasible"))
    gate = meta.get("failed_gate")
    if feasible is True:
        parts.append("passed")
    elif feasible is False or gate:
        parts.append(f"failed at {gate}" if gate else "failed")
    if (lat := _ms(meta.get("latency_ms"))) and feasible is not False:
        parts.append(lat)
    if (speedup := _as_float(meta.get("speedup"))) is not None:
        parts.append(f"{speedup:.3g}x vs eager")
    return ", ".join(parts)


def _label(item: ContextItem) -> str:
    bits = []
    if task := item.meta.get("task"):
        bits.append(f"task {task}")
    if outcome := _outcome(item.meta):
        bits.append(outcome)
    return f"[{'; '.join(bits)}] " if bits else ""


def _render_note(item: ContextItem, opts: PromptOptions) -> str:
    """Knowledge, seed notes, best practices and experiences: one bullet each."""
    title = item.meta.get("title") or item.meta.get("name")
    text = truncate(item.text.strip(), opts.max_item_chars)
    head = f"**{title}**: " if title and item.kind in {"knowledge", "seed"} else ""
    body = text.replace("\n", "\n  ")
    return f"- {_label(item) if item.kind == 'experience' else ''}{head}{body}"


# a template candidate's shape guard: `if tuple(x.shape) != (64, 64, 4096):` + its `raise ValueError(...)`
_SHAPE_GUARD = re.compile(
    r"^(?P<ind>[ \t]*)if tuple\((?P<name>\w+)\.shape\) != (?P<shape>\([0-9, ]*\)):[ \t]*\n"
    r"(?P=ind)[ \t]+raise ValueError\('this kernel was generated for [^\n]*\n", re.M)


def adapt_foreign_code(code: str) -> tuple[str, dict[str, str]]:
    """A trace of another operator as a prompt shows it: without the shape guards of a template candidate
    (a weak model copied them, and the copy failed on its own inputs), and the shapes they named."""
    shapes: dict[str, str] = {}

    def drop(m: re.Match[str]) -> str:
        shapes[m["name"]] = m["shape"]
        return ""

    return _SHAPE_GUARD.sub(drop, code), shapes


def _kernel_view(code: str) -> str | None:
    """A kernel-only candidate's code as the kernel form shows it: the model's C++ alone (the glue is generated)."""
    from evokernel.generators.kernel_form import KERNEL_MARK, kernel_of_candidate

    return kernel_of_candidate(code) if KERNEL_MARK in code else None


def _render_code_item(item: ContextItem, heading: str, opts: PromptOptions, own_task: str = "",
                      kernel_form: bool = False) -> str:
    """A trace or a child: heading with outcome, summary, verifier feedback, then the code. A trace of
    another task (``own_task`` given and different) says so, and loses its shape guards (`adapt_foreign_code`)."""
    meta = item.meta
    code = item.text.strip()
    lang = "python"
    if kernel_form and (kernel := _kernel_view(code)) is not None:
        code, lang = kernel.strip(), "cpp"
    lines = [f"{heading}{' (' + _outcome(meta) + ')' if _outcome(meta) else ''}"]
    task = meta.get("task")
    foreign = bool(own_task and task and task != own_task)
    if task:
        lines.append(f"Task: {task}" + (" (another operator: adapt what helps, do not copy it)" if foreign else ""))
    if foreign and lang == "python":
        code, shapes = adapt_foreign_code(code)
        if shapes:
            sizes = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
            lines.append(f"Sizes: written for that task's inputs ({sizes}); the sizes in its Python code (output "
                         "shapes, the size arguments of `lib` calls) are those, while its C++ functions take sizes "
                         "as parameters. Compute yours from your inputs' `.shape`.")
    if summary := meta.get("summary"):
        lines.append(f"What it tried: {truncate(str(summary).strip(), 400)}")
    if feedback := meta.get("feedback"):
        fb = truncate(str(feedback).strip(), min(opts.max_feedback_chars, opts.max_item_chars // 2))
        lines.append("Verifier feedback:\n" + _fence(fb))
    lines.append(_fence(code, lang) if code else "(no code kept)")
    text = "\n".join(lines)
    if len(text) > opts.max_item_chars:
        # cut the code, not the outcome: re-render with a shorter code part
        overflow = len(text) - opts.max_item_chars
        code = truncate(code, max(len(code) - overflow - 80, 200))
        text = "\n".join(lines[:-1] + [_fence(code, lang)])
    return text


class _Budget:
    """Characters left; a share of a budget charges its parent too."""

    def __init__(self, chars: int, parent: _Budget | None = None):
        self.left = max(int(chars), 0)
        self.parent = parent

    def share(self, fraction: float) -> _Budget:
        return _Budget(self.left * fraction, self)

    def take(self, text: str) -> bool:
        need = len(text) + 2
        if need > self.left or (self.parent is not None and need > self.parent.left):
            return False
        self.left -= need
        if self.parent is not None:
            self.parent.take_exact(need)
        return True

    def take_exact(self, need: int) -> None:
        self.left -= need
        if self.parent is not None:
            self.parent.take_exact(need)


def _section(title: str, rendered: list[str], omitted: int, level: str = "###") -> str:
    if not rendered and not omitted:
        return ""
    body = "\n\n".join(rendered) if rendered else "(none shown)"
    plural = "s" if omitted != 1 else ""
    note = f"\n\n({omitted} more item{plural} left out to keep the prompt short)" if omitted else ""
    return f"{level} {title}\n\n{body}{note}\n"


def _fit(items: Iterable[ContextItem], render, budget: _Budget) -> tuple[list[str], int]:
    shown: list[str] = []
    omitted = 0
    for item in items:
        text = render(item)
        if budget.take(text):
            shown.append(text)
        else:
            omitted += 1
    return shown, omitted


def _categories(value: Any) -> list[str]:
    if isinstance(value, str):
        import json

        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return [value]
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else []


def _context_sections(request: GenerationRequest, opts: PromptOptions, budget: _Budget,
                      kernel_form: bool = False) -> tuple[str, str]:
    """(the API knowledge section, the retrieved-context section)."""
    groups: dict[str, list[ContextItem]] = {k: [] for k in KIND_TITLES}
    # the kernel-only form states its format in the system prompt: the backend's core items (the full file's
    # format) would only contradict it
    groups["knowledge"].extend(k for k in request.knowledge
                               if not (kernel_form and "*" in _categories(k.meta.get("categories"))))
    other: list[ContextItem] = []
    for item in request.context:
        (groups[item.kind] if item.kind in groups and item.kind != "knowledge" else other).append(item)
    rendered: dict[str, tuple[list[str], int]] = {}
    # notes are short and broadly useful: they are fitted first, but into at most half of the budget,
    # so whole traces (code with outcomes) still get room
    notes = budget.share(0.5) if groups["trace"] else budget
    for kind in ("knowledge", "seed", "best_practice", "experience"):
        rendered[kind] = _fit(groups[kind], lambda it: _render_note(it, opts), notes)
    rendered["other"] = _fit(other, lambda it: _render_note(it, opts), notes)
    counter = iter(range(1, 10_000))
    rendered["trace"] = _fit(groups["trace"],
                             lambda it: _render_code_item(it, f"#### Trace {next(counter)}", opts,
                                                          request.task.task_id, kernel_form), budget)
    parts = [_section(KIND_TITLES[k], *rendered[k]) for k in KIND_TITLES if k != "knowledge"]
    parts.append(_section("Other notes", *rendered["other"]))
    body = "\n".join(p for p in parts if p)
    knowledge = _section(KIND_TITLES["knowledge"], *rendered["knowledge"], "##")
    if not body:
        return knowledge, ""
    return knowledge, ("\n## Retrieved context\n\nFrom the memory of earlier work (on this and similar tasks); "
                       "use what helps.\n\n" + body)


def _task_line(request: GenerationRequest) -> str:
    task = request.task
    bits = []
    if task.description:
        bits.append(task.description.rstrip("."))
    if task.category and task.category != "uncategorized":
        bits.append(f"category: {task.category}")
    if task.overrides:
        bits.append("sizes overridden: " + ", ".join(f"{k}={v!r}" for k, v in task.overrides.items()))
    return ("; ".join(bits) + ".\n") if bits else ""


def render_prompt(request: GenerationRequest, options: PromptOptions | None = None,
                  kernel: Any = None) -> tuple[str, str]:
    """``(system, human)`` prompt texts for ``request``; with ``kernel`` (a
    :class:`~evokernel.generators.kernel_form.KernelSpec`) the kernel-only form's: the model is asked for the
    declared function only."""
    opts = options or PromptOptions()
    backend = request.backend or "cpu"
    target = target_notes(backend)
    prefix = "kernel-" if kernel is not None else ""
    system = load_template(backend, prefix + "system").substitute(tolerance=f"{opts.tolerance:g}", backend=backend,
                                                         target=target)
    budget = _Budget(opts.max_context_chars)

    refining = request.stage == REFINE
    children_text = ""
    if refining and request.children:
        counter = iter(range(1, 10_000))
        # the start point's own variants come first, in at most half of the budget
        share = budget.share(0.5) if (request.context or request.knowledge) else budget
        shown, omitted = _fit(request.children,
                              lambda it: _render_code_item(it, f"### Variant {next(counter)}", opts,
                                                           kernel_form=kernel is not None), share)
        if shown or omitted:
            children_text = _section("Earlier refinements of this kernel and their outcomes", shown, omitted, "\n##")
            children_text = children_text.replace(
                "outcomes\n\n", "outcomes\n\nVariants already tried from this same start point; "
                "do not repeat them.\n\n", 1)
    knowledge, context = _context_sections(request, opts, budget, kernel is not None)

    feedback = ""
    if request.last_feedback:
        feedback = ("\n## Feedback on the previous attempt at this task\n\nIt did not pass the verifier; "
                    "fix this first:\n\n" + _fence(truncate(request.last_feedback.strip(), opts.max_feedback_chars))
                    + "\n")
    values: dict[str, str] = {
        "task_name": request.task.name,
        "task_line": _task_line(request),
        "reference_source": truncate(request.task.source.strip(), opts.max_code_chars),
        "context": context,
        "last_feedback": feedback,
        "backend": backend,
        "target": target,
    }
    if refining:
        start = request.start_point
        start_meta = start.meta if start else {}
        start_lat = _ms(start_meta.get("latency_ms"))
        best = _ms(request.best_latency_ms)
        profile = ""
        if request.profile:
            profile = ("\n## Profile and verifier feedback of this kernel\n\n"
                       + _fence(truncate(request.profile.strip(), opts.max_feedback_chars)) + "\n")
        values.update(
            start_point=truncate((start.text if start else "").strip(), opts.max_code_chars) or "# (no source)",
            start_latency=f" in {start_lat}" if start_lat else "",
            best_latency=best or "not known yet",
            profile=profile,
            children=children_text,
        )
    if kernel is not None:
        values.update(signature=kernel.signature, layout=kernel.describe())
        if refining:
            values.update(_kernel_start(request.start_point, opts))
    human = load_template(backend, prefix + ("refine" if refining else "draft")).substitute(values)
    # API knowledge first: the backend's core items (the candidate format) are the same for every task,
    # so the system prompt plus this section is a prefix a local server's prompt cache reuses across
    # tasks and attempts; what varies (the task, retrieved context, feedback) comes after it
    if knowledge:
        human = knowledge + "\n" + human
    return system, human


def _kernel_start(start: ContextItem | None, opts: PromptOptions) -> dict[str, str]:
    """The start point as the kernel form shows it: a kernel-only candidate's C++ alone; any other candidate (a
    template draft, a full candidate) whole, with a note on reusing its C++ inside the declared entry."""
    code = (start.text if start else "").strip()
    kernel = _kernel_view(code) if code else None
    if kernel is not None:
        return {"start_note": "", "start_point": _fence(truncate(kernel.strip(), opts.max_code_chars), "cpp")}
    note = ("\nIt is a whole candidate file whose Python calls its C++ functions; you write only `kernel`, so "
            "reuse its C++ inside `kernel`: keep its helper functions as `static inline` (not `extern \"C\"`) "
            "and do in `kernel` what its `forward` does (temporary buffers with `new`/`delete[]` or "
            "`std::vector`).\n")
    return {"start_note": note, "start_point": _fence(truncate(code, opts.max_code_chars) or "# (no source)", "python")}


def render_messages(request: GenerationRequest, options: PromptOptions | None = None,
                    kernel: Any = None) -> list[BaseMessage]:
    """The chat messages for ``request``: one system message, one human message (``kernel``: the kernel-only
    form's, see :func:`render_prompt`)."""
    system, human = render_prompt(request, options, kernel)
    return [SystemMessage(content=system), HumanMessage(content=human)]
