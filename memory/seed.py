"""Seed knowledge (M0): API templates and refinement best practices shipped with the package.

Each backend family has a folder ``memory/seed/<family>/`` of markdown files with a small front matter::

    ---
    title: OpenMP parallel loops
    kind: seed
    apis: [omp parallel for, schedule(static)]
    categories: [elementwise, activation]
    key: optional text to embed instead of "title: categories"

``kind`` is ``seed`` (API knowledge, looked up by name/category) or ``best_practice`` (retrieved by
similarity and value like experiences); a category ``*`` marks a core item that is always part of the
drafting context. Values are plain text or ``[a, b]`` lists (items may be quoted); no comments.
    ---
    body (markdown, shown in prompts)

``load_seed(backend)`` turns them into `MemoryItem`s with stable ids (``seed:<family>:<file stem>``)
and a content hash, so `MemoryStore.ensure_seed` is idempotent and replaces an item only when its file
changed. ``apis_in(text, backend)`` finds which of the seed's API names occur in a piece of code (the
exact-name lookup of APIs seen in retrieved code).

Backends of one family (`evokernel.verifier.backends.registry`: ``ascend-sim`` and ``ascend``) share the folder of the
family and the item ids; an item's ``meta["backend"]`` is the backend it was loaded for, so the store's
per-backend lookups find it.
"""
from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path
from typing import Any

from evokernel.verifier.backends.registry import family

from .store import MemoryItem

__all__ = ["SEED_DIR", "SEED_KINDS", "SeedError", "apis_in", "backends", "family", "load_seed", "parse_seed_file"]

SEED_DIR = Path(__file__).resolve().parent / "seed"
SEED_KINDS = ("seed", "best_practice")


class SeedError(ValueError):
    """A seed file is malformed."""


def backends() -> list[str]:
    """The seed folders (one per backend family)."""
    return sorted(p.name for p in SEED_DIR.iterdir() if p.is_dir()) if SEED_DIR.is_dir() else []


def _value(raw: str) -> Any:
    raw = raw.strip()
    if raw.startswith("[") and raw.endswith("]"):
        inner = raw[1:-1].strip()
        return [_unquote(x) for x in _split_list(inner)] if inner else []
    return _unquote(raw)


def _split_list(inner: str) -> list[str]:
    """Split on commas outside quotes."""
    parts, cur, quote = [], [], ""
    for ch in inner:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            cur.append(ch)
        elif ch == ",":
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p]


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def parse_seed_file(path: Path) -> tuple[dict[str, Any], str]:
    """(front matter, body) of one seed file."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        raise SeedError(f"{path}: a seed file starts with a '---' front matter block")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise SeedError(f"{path}: the front matter is not closed with '---'") from None
    front: dict[str, Any] = {}
    for n, line in enumerate(lines[1:end], start=2):
        line = line.rstrip()
        if not line.strip():
            continue
        name, sep, value = line.partition(":")
        if not sep or not name.strip().isidentifier():
            raise SeedError(f"{path}:{n}: expected 'name: value', got {line!r}")
        front[name.strip()] = _value(value)
    body = "\n".join(lines[end + 1:]).strip() + "\n"
    if not front.get("title"):
        raise SeedError(f"{path}: the front matter needs a title")
    kind = front.setdefault("kind", "seed")
    if kind not in SEED_KINDS:
        raise SeedError(f"{path}: kind must be one of {SEED_KINDS}, got {kind!r}")
    for name in ("apis", "categories", "ops"):
        v = front.setdefault(name, [])
        if isinstance(v, str):
            front[name] = [v]
    return front, body


@functools.lru_cache(maxsize=None)
def _load(backend: str) -> tuple[MemoryItem, ...]:
    """The items of ``backend``'s family folder, tagged with ``backend``."""
    fam = family(backend)
    folder = SEED_DIR / fam
    if not folder.is_dir():
        raise SeedError(f"no seed knowledge for backend {backend!r} (have: {', '.join(backends()) or 'none'})")
    items = []
    for path in sorted(folder.glob("*.md")):
        front, body = parse_seed_file(path)
        categories = [str(c) for c in front["categories"]]
        key = front.get("key") or f"{front['title']}: {', '.join(c for c in categories if c != '*') or 'general'}"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        items.append(MemoryItem(
            id=f"seed:{fam}:{path.stem}",
            kind=front["kind"],
            key=str(key),
            text=f"## {front['title']}\n\n{body}",
            meta={"backend": backend, "task": "", "category": next((c for c in categories if c != "*"), ""),
                  "categories": categories, "apis": [str(a) for a in front["apis"]],
                  "ops": [str(o) for o in front["ops"]], "title": str(front["title"]),
                  "source": "seed", "run": "", "created": "", "iteration": 0, "content_hash": digest,
                  "seed_file": path.name},
        ))
    return tuple(items)


def load_seed(backend: str) -> list[MemoryItem]:
    """The seed items of ``backend`` (fresh copies)."""
    return [MemoryItem(it.id, it.kind, it.key, it.text, dict(it.meta)) for it in _load(backend)]


@functools.lru_cache(maxsize=None)
def _api_patterns(backend: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    names = sorted({a for it in _load(family(backend)) for a in it.meta["apis"]})
    return tuple((a, re.compile(r"(?<![A-Za-z0-9_])" + re.escape(a) + r"(?![A-Za-z0-9_])")) for a in names)


def apis_in(text: str, backend: str) -> list[str]:
    """The seed API names of ``backend`` that occur in ``text`` (e.g. retrieved kernel code)."""
    if not text:
        return []
    return [name for name, pat in _api_patterns(family(backend)) if pat.search(text)]
