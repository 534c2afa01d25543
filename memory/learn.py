"""What the model writes into memory: experiences summarised from attempts, best practices distilled from
measured refinements (paper §3.2: "summarised success and failure experiences", "best practices for kernel
refinement"; issue 18, item 1).

* **Experiences.** With an LLM generator, the experience stored after an attempt is a short entry the model
  writes from the attempt: what changed against the start point (a bounded unified diff; a draft: the
  generator's summary and the head of its code), the verifier's outcome and its feedback. The reply is
  checked by :func:`parse_experience` (not empty, not too long, prose rather than code, not a refusal); on
  any failure (an exception, a timeout, junk) the template sentence is stored instead and the reason is
  kept (:class:`Written`). The template generator always gets the template sentence.
* **Best practices.** Every ``every`` successful refinements (speedup over the start point of at least
  ``min_gain``), :func:`maybe_distil` shows the model the parent -> child pairs not yet distilled (what
  changed, what it gained) and stores the practices it states as ``best_practice`` items (id
  ``bp:learned:<hash of the text>``, so an exact duplicate is never stored twice; one whose key is at least
  ``dedup`` cosine-similar to an existing best practice is merged into it when learned, skipped when it is a
  seed item). They go through retrieval and the values like every item. ``DIR/distilled.jsonl`` records each
  round (which traces it consumed, what it stored, or why nothing).

Prompts are files: ``prompts/learn/{experience,distil}{.system,}.md`` (string.Template, ``$name``).
"""
from __future__ import annotations

import dataclasses
import difflib
import fcntl
import hashlib
import json
import re
import string
import threading
import time
from dataclasses import dataclass, field
from importlib import resources as ilr
from pathlib import Path
from typing import Any, Sequence

from .store import VALUE_KEYS, MemoryItem

__all__ = ["DistillLog", "JunkReply", "Pair", "Written", "change_text", "distil_messages", "experience_messages",
           "maybe_distil", "parse_experience", "parse_practices", "practice_id", "store_practices",
           "write_experience"]

EXPERIENCE_MAX_TOKENS = 160  # ~3 sentences; the reply is cut by the endpoint beyond
EXPERIENCE_MAX_CHARS = 800  # a longer reply is junk (the prompt asks for under 80 words)
EXPERIENCE_MIN_WORDS = 6
CHANGE_CHARS = 2_400  # the diff shown to the summariser
DRAFT_CODE_CHARS = 1_200  # the head of a draft's code (no start point to diff against): prompt evaluation is slow locally
FEEDBACK_CHARS = 800
DISTIL_MAX_TOKENS = 320
DISTIL_MAX_ITEMS = 3  # practices asked per round
DISTIL_MAX_PAIRS = 6  # refinements shown per round (the largest gains first)
PAIR_CHANGE_CHARS = 1_200
PRACTICE_MIN_WORDS = 6
PRACTICE_MAX_CHARS = 400
DEFAULT_TIMEOUT_S = 300.0


class JunkReply(ValueError):
    """A reply that is not usable as memory text; the message says why."""


def load_prompt(name: str) -> string.Template:
    """``prompts/learn/<name>.md`` of the package."""
    path = ilr.files("evokernel.prompts") / "learn" / f"{name}.md"
    return string.Template(path.read_text(encoding="utf-8"))


# ---------------------------------------------------------------------------------------------- helpers

def _cut(text: str, limit: int) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: max(limit - 30, 0)] + f"\n... [{len(text) - limit + 30} chars cut]"


def change_text(parent_code: str | None, code: str | None, limit: int = CHANGE_CHARS) -> str:
    """What a candidate changed: a unified diff against its start point (refining), else the head of its code;
    at most ``limit`` characters."""
    code = code or ""
    if not code.strip():
        return "(no code: the reply held no usable candidate)"
    if parent_code and parent_code.strip():
        diff = [ln for ln in difflib.unified_diff(parent_code.splitlines(), code.splitlines(), "start point",
                                                  "this attempt", n=1, lineterm="")]
        if not diff:
            return "(the same code as the start point)"
        return _cut("\n".join(diff), limit)
    return _cut(code, min(limit, DRAFT_CODE_CHARS))


_REFUSAL = re.compile(r"\b(I'?m sorry|I am sorry|I apologi[sz]e|I can ?not|I can't|I'?m unable|I am unable|"
                      r"as an AI|language model)\b", re.I)
_CODE_LINE = re.compile(r"^\s*(#include|#pragma|#define|def |class |import |from \S+ import|extern |return\b|"
                        r"for\s*\(|if\s*\(|while\s*\(|template\s*<|using |[A-Za-z_][\w:<>*& ]*\([^)]*\)\s*\{)"
                        r"|[;{}]\s*$")
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:notebook entry|entry|summary|experience|lesson)(?:\*\*)?\s*:\s*(?:\*\*)?\s*",
                    re.I)
_SENTENCE_END = re.compile(r"(?<=[.!?])(?:[\"')\]]*)\s+")


def _looks_like_code(text: str) -> bool:
    if "```" in text:
        return True
    lines = [ln for ln in text.splitlines() if ln.strip()]
    coded = sum(1 for ln in lines if _CODE_LINE.search(ln))
    return coded >= 2 or (bool(lines) and coded / len(lines) > 0.5)


def _prose(reply: str) -> str:
    text = _LABEL.sub("", (reply or "").strip())
    text = text.replace("**", "").replace("__", "")
    return text.strip()


def _complete_sentences(text: str) -> str:
    """The text up to its last complete sentence ('' when none ends)."""
    ends = [m.start() for m in re.finditer(r"[.!?](?=[\"')\]]*(?:\s|$))", text)]
    return text[: ends[-1] + 1].strip() if ends else ""


_SUCCESS = re.compile(r"\b(compiles|compiled|passed|passes|succeeded|successful(ly)?|feasible|faster|speed-?up)\b", re.I)
_FAILURE = re.compile(r"\b(fail\w*|error\w*|not declared|mismatch\w*|wrong|incorrect|refused|rejected|slower|"
                      r"did not|didn't|could not|couldn't|undefined|crash\w*|timed? ?out|not pass|infeasible)\b", re.I)


def contradicts(text: str, feasible: bool) -> bool:
    """Whether the text tells the opposite of the verdict: success words and no failure word for a failed
    attempt, failure words and no success word for a feasible one (the 1.5B model wrote "the code compiles
    successfully" about a compile failure: tests/memory/fixtures/learn_replies.json)."""
    said_ok, said_bad = bool(_SUCCESS.search(text)), bool(_FAILURE.search(text))
    return (said_ok and not said_bad) if not feasible else (said_bad and not said_ok)


def parse_experience(reply: str, truncated: bool = False, feasible: bool | None = None) -> str:
    """The experience text of a summariser reply: one paragraph of prose. Raises :class:`JunkReply` for an
    empty reply, a refusal, code, one too long or too short, or (``feasible`` given) one that contradicts the
    verdict; a reply cut at the token limit (``truncated``) keeps its complete sentences."""
    if not (reply or "").strip():
        raise JunkReply("empty reply")
    if _looks_like_code(reply):
        raise JunkReply("code, not prose")
    text = _prose(reply)
    if _REFUSAL.search(text[:200]):
        raise JunkReply("a refusal")
    if truncated:
        text = _complete_sentences(text)
        if not text:
            raise JunkReply("cut at the token limit before one sentence ended")
    text = " ".join(text.split())  # one paragraph
    if len(text) > EXPERIENCE_MAX_CHARS:
        raise JunkReply(f"too long ({len(text)} characters, at most {EXPERIENCE_MAX_CHARS})")
    if len(text.split()) < EXPERIENCE_MIN_WORDS:
        raise JunkReply(f"too short ({len(text.split())} words)")
    if feasible is not None and contradicts(text, feasible):
        raise JunkReply(f"contradicts the verdict (the attempt {'passed' if feasible else 'failed'})")
    return text


def _call(asker: Any, messages: list[Any], max_tokens: int, timeout_s: float) -> tuple[str, int, int, float, dict]:
    """``asker.ask(messages, max_tokens=...)`` with a wall-clock limit: a call still running after
    ``timeout_s`` is abandoned (its reply, if it ever comes, is discarded) and TimeoutError raised."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["out"] = asker.ask(messages, max_tokens=max_tokens, attempts=1)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["exc"] = exc

    worker = threading.Thread(target=run, name="evokernel-learn", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        raise TimeoutError(f"no reply within {timeout_s:g} s")
    if "exc" in box:
        raise box["exc"]
    return box["out"]


# ------------------------------------------------------------------------------------------ experiences

@dataclass
class Written:
    """The experience stored for an attempt and how it came about."""

    text: str
    kind: str  # "model" (written by the model) or "template" (the template sentence)
    reason: str = ""  # why the template sentence: "template generator", "off", "recall", "fallback: <why>"
    model: str = ""
    reply: str = ""  # the model's raw reply (kept in the item's metadata, cut, when it was junk)
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    seconds: float = 0.0

    def log(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("text")
        d["reply"] = self.reply[:300]
        return d


def experience_messages(*, backend: str, task: str, category: str, stage: str, change: str, outcome: str,
                        feedback: str = "", start: str = "") -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    system = load_prompt("experience.system").substitute(backend=backend)
    human = load_prompt("experience").substitute(
        task=task, category=category or "uncategorized", stage="refining" if stage == "refine" else "drafting",
        start=f"Start point: {start}\n" if start else "", change=change, outcome=outcome,
        feedback=f"Verifier feedback (first lines):\n{_cut(feedback.strip(), FEEDBACK_CHARS)}\n" if feedback.strip() else "")
    return [SystemMessage(content=system), HumanMessage(content=human)]


def write_experience(asker: Any, messages: list[Any], template_text: str, *, model: str = "",
                     timeout_s: float = DEFAULT_TIMEOUT_S, max_tokens: int = EXPERIENCE_MAX_TOKENS,
                     feasible: bool | None = None) -> Written:
    """The model's experience for an attempt, or the template sentence with the reason when the call fails,
    times out or returns junk. Never raises (a stop request or a cap reached also falls back: the next
    generation stops the run)."""
    started = time.monotonic()
    try:
        text, tin, tout, cost, info = _call(asker, messages, max_tokens, timeout_s)
    except BaseException as exc:  # noqa: BLE001 - whatever went wrong, the attempt keeps its experience
        if isinstance(exc, (SystemExit,)):
            raise
        what = "timeout" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        return Written(template_text, "template", f"fallback: {what}", model, seconds=time.monotonic() - started)
    base = dict(model=model, reply=text, tokens_in=tin, tokens_out=tout, cost_usd=cost,
                calls=int(info.get("calls", 1)), seconds=time.monotonic() - started)
    try:
        body = parse_experience(text, truncated=info.get("finish_reason") == "length", feasible=feasible)
    except JunkReply as exc:
        return Written(template_text, "template", f"fallback: {exc}", **base)
    return Written(body, "model", "", **base)


# ------------------------------------------------------------------------------------- best practices

@dataclass
class Pair:
    """A measured refinement: the start point (parent) and the refined kernel (child)."""

    child: str
    parent: str
    task: str
    category: str
    gain: float  # parent latency / child latency
    parent_ms: float
    child_ms: float
    change: str
    parent_summary: str = ""
    child_summary: str = ""


def successful_refinements(store: Any, backend: str, min_gain: float, limit: int = 5000) -> list[MemoryItem]:
    """Feasible refinement traces of ``backend`` at least ``min_gain`` times faster than their start point."""
    got = store.find_where("trace", limit=limit, stage="refine", feasible=True, backend=backend)
    return [t for t in got if float(t.meta.get("speedup_vs_parent") or -1) >= min_gain and t.meta.get("parent")]


def make_pairs(store: Any, children: Sequence[MemoryItem]) -> list[Pair]:
    parents = {p.id: p for p in store.get(list({c.meta["parent"] for c in children}))}
    pairs = []
    for c in children:
        p = parents.get(c.meta["parent"])
        if p is None:
            continue
        gain = float(c.meta.get("speedup_vs_parent") or 0)
        child_ms = float(c.meta.get("latency_ms") or 0)
        pairs.append(Pair(c.id, p.id, str(c.meta.get("task", "")), str(c.meta.get("category", "")), gain,
                          child_ms * gain, child_ms, change_text(p.text, c.text, PAIR_CHANGE_CHARS),
                          str(p.meta.get("summary") or ""), str(c.meta.get("summary") or "")))
    return pairs


def distil_messages(pairs: Sequence[Pair], backend: str, max_items: int = DISTIL_MAX_ITEMS) -> list[Any]:
    from langchain_core.messages import HumanMessage, SystemMessage

    blocks = []
    for i, p in enumerate(pairs, 1):
        lines = [f"### Refinement {i}: {p.task} ({p.category or 'uncategorized'}): {p.gain:.2f}x faster "
                 f"({p.parent_ms:.4g} ms -> {p.child_ms:.4g} ms)"]
        if p.parent_summary:
            lines.append(f"Start point: {p.parent_summary}")
        if p.child_summary:
            lines.append(f"Refinement: {p.child_summary}")
        lines.append("Change (diff):\n" + p.change)
        blocks.append("\n".join(lines))
    system = load_prompt("distil.system").substitute(backend=backend)
    human = load_prompt("distil").substitute(pairs="\n\n".join(blocks), max_items=max_items)
    return [SystemMessage(content=system), HumanMessage(content=human)]


_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*)$")


def parse_practices(reply: str, truncated: bool = False, max_items: int = DISTIL_MAX_ITEMS) -> list[str]:
    """The practices of a distiller reply: its bullet lines (``- ...``, ``1. ...``) that are prose of
    ``PRACTICE_MIN_WORDS`` words to ``PRACTICE_MAX_CHARS`` characters; code blocks are dropped with what they
    contain. Raises :class:`JunkReply` when none is usable (empty, a refusal, only code)."""
    if not (reply or "").strip():
        raise JunkReply("empty reply")
    if _REFUSAL.search(reply[:200]):
        raise JunkReply("a refusal")
    text = re.sub(r"```.*?(```|$)", "", reply, flags=re.S)  # code blocks (and an unclosed one) go
    lines = text.splitlines()
    if truncated and lines:
        lines = lines[:-1] + ([_complete_sentences(lines[-1])] if _complete_sentences(lines[-1]) else [])
    out: list[str] = []
    for ln in lines:
        m = _BULLET.match(ln)
        if not m:
            continue
        body = " ".join(_prose(m.group(1)).split())
        if (len(body.split()) < PRACTICE_MIN_WORDS or len(body) > PRACTICE_MAX_CHARS or _CODE_LINE.search(body)
                or body.lower() in (o.lower() for o in out)):
            continue
        out.append(body)
        if len(out) == max_items:
            break
    if not out:
        raise JunkReply("no usable practice line (bullets of prose, "
                        f"{PRACTICE_MIN_WORDS} words to {PRACTICE_MAX_CHARS} characters)")
    return out


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s.]", " ", text.lower()).split())


def practice_id(text: str) -> str:
    """The id of a learned practice: a hash of its normalised text (case, punctuation, spacing)."""
    return "bp:learned:" + hashlib.sha256(_norm(text).encode()).hexdigest()[:16]


def store_practices(store: Any, practices: Sequence[str], pairs: Sequence[Pair], *, backend: str, run: str,
                    source: str, dedup: float) -> list[dict[str, Any]]:
    """Store ``practices`` as ``best_practice`` items with their provenance; returns one action per practice:
    ``added``, ``duplicate`` (same text: provenance merged into it), ``merged`` (a learned practice at least
    ``dedup`` similar: provenance merged) or ``skipped`` (a seed practice at least ``dedup`` similar)."""
    traces = [p.child for p in pairs] + [p.parent for p in pairs]
    tasks = sorted({p.task for p in pairs if p.task})
    cats = sorted({p.category for p in pairs if p.category})
    evidence = ", ".join(f"{p.task} {p.gain:.2f}x" for p in pairs[:4])
    actions: list[dict[str, Any]] = []
    for text in practices:
        pid = practice_id(text)
        key = f"best practice: {text} | {', '.join(cats)}"
        existing = store.get([pid])
        target, action, sim = (existing[0], "duplicate", 1.0) if existing else (None, "added", 0.0)
        if target is None:
            hits = store.query(key, 1, kinds=("best_practice",), backend=backend)
            if hits and hits[0][1] >= dedup:
                target, sim = hits[0]
                action = "merged" if target.meta.get("learned") else "skipped"
        if action == "skipped":
            actions.append({"text": text, "action": action, "id": target.id, "similarity": round(float(sim), 3)})
            continue
        if target is not None:  # merge the provenance; its text, id and values stay
            meta = {k: v for k, v in target.meta.items() if k not in VALUE_KEYS}  # the value mirror is resynced
            meta["from_traces"] = list(dict.fromkeys(list(meta.get("from_traces") or []) + traces))[-60:]
            meta["tasks"] = sorted(set(meta.get("tasks") or []) | set(tasks))
            meta["categories"] = sorted(set(meta.get("categories") or []) | set(cats))
            meta["support"] = int(meta.get("support") or 1) + 1
            meta["updated"] = time.strftime("%Y-%m-%dT%H:%M:%S")
            store.add([MemoryItem(target.id, "best_practice", target.key, target.text, meta)])
            actions.append({"text": text, "action": action, "id": target.id, "similarity": round(float(sim), 3)})
            continue
        meta = {"backend": backend, "task": "", "category": cats[0] if len(cats) == 1 else "", "categories": cats,
                "tasks": tasks, "learned": True, "origin": "distilled", "from_traces": traces,
                "gains": [round(p.gain, 3) for p in pairs], "run": run, "source": source,
                "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "support": 1, "title": " ".join(text.split()[:8]),
                "content_hash": pid.rsplit(":", 1)[-1]}
        store.add([MemoryItem(pid, "best_practice", key,
                              f"{text}\n(learned from {len(pairs)} measured refinement(s): {evidence})", meta)])
        actions.append({"text": text, "action": "added", "id": pid})
    return actions


class DistillLog:
    """``DIR/distilled.jsonl``: one line per distillation round (appended under an flock, so several processes
    sharing the memory agree on which refinements are consumed)."""

    def __init__(self, memory_dir: str | Path):
        self.path = Path(memory_dir) / "distilled.jsonl"

    def _read(self) -> list[dict[str, Any]]:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for ln in lines:
            try:
                out.append(json.loads(ln))
            except json.JSONDecodeError:  # a torn last line of a killed process: that round did not happen
                continue
        return out

    def rounds(self) -> list[dict[str, Any]]:
        return self._read()

    def consumed(self) -> set[str]:
        return {t for r in self._read() if r.get("consumed") for t in r.get("traces") or []}

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            try:
                f.write(json.dumps(record) + "\n")
                f.flush()
            finally:
                fcntl.flock(f, fcntl.LOCK_UN)


@dataclass
class Distilled:
    """One distillation round."""

    traces: list[str]
    actions: list[dict[str, Any]] = field(default_factory=list)
    status: str = ""  # "stored", "fallback: <why>"
    model: str = ""
    reply: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    seconds: float = 0.0

    def log(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["reply"] = self.reply[:1000]
        return d


def maybe_distil(store: Any, asker: Any, *, backend: str, every: int, min_gain: float, dedup: float, run: str,
                 source: str, round_id: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Distilled | None:
    """A distillation round when at least ``every`` successful refinements of ``backend`` are not yet
    distilled (None otherwise). The refinements shown are consumed when the model answered (practices stored
    or a junk reply); after an error or a timeout they stay pending for the next round."""
    if every <= 0:
        return None
    dlog = DistillLog(store.path)
    if any(r.get("round") == round_id for r in dlog.rounds()):  # this attempt's round ran (a re-run update)
        return None
    done = dlog.consumed()
    pending = [t for t in successful_refinements(store, backend, min_gain) if t.id not in done]
    if len(pending) < every:
        return None
    pending.sort(key=lambda t: -float(t.meta.get("speedup_vs_parent") or 0))
    pairs = make_pairs(store, pending[:DISTIL_MAX_PAIRS])
    out = Distilled([p.child for p in pairs], model=source)
    started = time.monotonic()
    consumed = False
    try:
        text, tin, tout, cost, info = _call(asker, distil_messages(pairs, backend), DISTIL_MAX_TOKENS, timeout_s)
    except BaseException as exc:  # noqa: BLE001 - a failed round loses nothing: the pairs stay pending
        if isinstance(exc, SystemExit):
            raise
        out.status = "fallback: " + ("timeout" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {str(exc)[:200]}")
    else:
        out.reply, out.tokens_in, out.tokens_out, out.cost_usd = text, tin, tout, cost
        out.calls = int(info.get("calls", 1))
        consumed = True
        try:
            practices = parse_practices(text, truncated=info.get("finish_reason") == "length")
        except JunkReply as exc:
            out.status = f"fallback: {exc}"
        else:
            out.actions = store_practices(store, practices, pairs, backend=backend, run=run, source=source,
                                          dedup=dedup)
            out.status = "stored"
    out.seconds = time.monotonic() - started
    dlog.append(dict(out.log(), round=round_id, consumed=consumed, backend=backend, run=run,
                     time=time.strftime("%Y-%m-%dT%H:%M:%S")))
    return out
