"""Export and import of a memory (backbone transfer: reuse what one run or model learned in another).

File format: JSON lines. The first line is a header::

    {"format": "evokernel-memory", "version": 1, "created": ISO time, "source": {...},
     "items": N, "counts": {kind: n}, "filters": {...}, "embedding": "all-MiniLM-L6-v2"}

then one line per item: ``{"id", "kind", "key", "text", "meta", "values"}`` with ``values`` the item's
``q1, q2, n1, n2, last_r1, last_r2`` from the ledger (or null if it was never used). Embeddings are not
exported: the importer re-embeds the keys with its own model.

Import rules:

* the whole file is read and validated before anything is written; a malformed file raises
  `TransferError` naming the line, and the store is untouched;
* items whose id already exists in the store are skipped (the store's own content and learned values
  win), so importing twice adds nothing the second time;
* ``exclude_tasks`` drops items of those tasks (the paper filters test-operator traces when
  transferring to another backbone), and learned best practices distilled from any of them (their
  ``tasks`` metadata, memory/learn.py);
* ``backend`` re-tags imported items with another backend; seed items of a different backend are then
  skipped (API templates do not carry over between backends);
* with ``keep_values`` the new items' values are set through one ``import`` entry of the ledger.
"""
from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

from .store import KINDS, VALUE_KEYS, MemoryItem, MemoryStore, now_iso

FORMAT = "evokernel-memory"
VERSION = 1


class TransferError(ValueError):
    """An export file is malformed or does not fit the store."""


def _of_excluded(meta: dict[str, Any], excluded: set[str]) -> bool:
    """An item of an excluded task, or a learned practice distilled from one (its ``tasks`` list)."""
    if not excluded:
        return False
    tasks = meta.get("tasks")
    learned_from = set(tasks) if isinstance(tasks, list) else set()
    return str(meta.get("task", "")) in excluded or bool(learned_from & excluded)


def export_memory(store: MemoryStore, path: str | Path, *, exclude_tasks: Sequence[str] = (),
                  kinds: Sequence[str] | None = None, backend: str | None = None) -> int:
    """Write the store's items (optionally only ``kinds`` / ``backend``, without ``exclude_tasks``) and
    their values to ``path``; returns the number of items written."""
    if kinds is not None:
        bad = [k for k in kinds if k not in KINDS]
        if bad:
            raise TransferError(f"unknown kind(s) {bad} (one of {', '.join(KINDS)})")
    store.values.refresh()
    excluded = set(exclude_tasks)
    items: list[MemoryItem] = []
    for kind in (kinds if kinds is not None else KINDS):
        items += [it for it in store.find(kind=kind, backend=backend) if not _of_excluded(it.meta, excluded)]
    counts = Counter(it.kind for it in items)
    header = {"format": FORMAT, "version": VERSION, "created": now_iso(),
              "source": {"path": str(store.path), "server": store.url or "", "collection": store.collection_name},
              "items": len(items), "counts": dict(counts),
              "filters": {"exclude_tasks": sorted(excluded), "kinds": list(kinds) if kinds is not None else None,
                          "backend": backend},
              "embedding": "all-MiniLM-L6-v2"}
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
        for it in items:
            v = store.values.get(it.id)
            values = {k: getattr(v, k) for k in VALUE_KEYS} if v is not None else None
            meta = {k: val for k, val in it.meta.items() if k not in VALUE_KEYS}
            f.write(json.dumps({"id": it.id, "kind": it.kind, "key": it.key, "text": it.text, "meta": meta,
                                "values": values}) + "\n")
    os.replace(tmp, path)
    return len(items)


def read_export(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, item records) of an export file, validated."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise TransferError(f"cannot read {path}: {e}") from None
    lines = [ln for ln in raw.split(b"\n")]
    records: list[dict[str, Any]] = []
    header: dict[str, Any] | None = None
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise TransferError(f"{path}:{n}: not valid JSON ({e})") from None
        if not isinstance(obj, dict):
            raise TransferError(f"{path}:{n}: expected a JSON object")
        if header is None:
            if obj.get("format") != FORMAT:
                raise TransferError(f"{path}:{n}: not an evokernel memory export (no header with format {FORMAT!r})")
            if not isinstance(obj.get("version"), int) or obj["version"] > VERSION:
                raise TransferError(f"{path}:{n}: unsupported export version {obj.get('version')!r} "
                                    f"(this evokernel reads up to {VERSION})")
            header = obj
            continue
        for name, typ in (("id", str), ("kind", str), ("key", str), ("text", str), ("meta", dict)):
            if not isinstance(obj.get(name), typ):
                raise TransferError(f"{path}:{n}: item field {name!r} missing or not a {typ.__name__}")
        if not obj["id"]:
            raise TransferError(f"{path}:{n}: empty item id")
        if obj["kind"] not in KINDS:
            raise TransferError(f"{path}:{n}: unknown kind {obj['kind']!r} (one of {', '.join(KINDS)})")
        vals = obj.get("values")
        if vals is not None:
            if not isinstance(vals, dict) or set(vals) - set(VALUE_KEYS):
                raise TransferError(f"{path}:{n}: 'values' must be null or an object with {', '.join(VALUE_KEYS)}")
            for k, v in vals.items():
                if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                    raise TransferError(f"{path}:{n}: value {k!r} must be a number, got {v!r}")
        records.append(obj)
    if header is None:
        raise TransferError(f"{path}: empty file (no header)")
    if isinstance(header.get("items"), int) and header["items"] != len(records):
        raise TransferError(f"{path}: the header announces {header['items']} items but the file has {len(records)} "
                            "(truncated?)")
    return header, records


def import_memory(store: MemoryStore, path: str | Path, *, exclude_tasks: Sequence[str] = (),
                  keep_values: bool = True, backend: str | None = None) -> int:
    """Add the items of an export file to ``store`` (see the module docstring); returns how many were
    added."""
    _, records = read_export(path)
    excluded = set(exclude_tasks)
    existing = set(store.ids())
    items: list[MemoryItem] = []
    values: dict[str, dict[str, Any]] = {}
    for rec in records:
        meta = {k: v for k, v in rec["meta"].items() if k not in VALUE_KEYS}
        if _of_excluded(meta, excluded) or rec["id"] in existing:
            continue
        if backend is not None and meta.get("backend") != backend:
            if rec["kind"] == "seed":
                continue  # API templates belong to their backend
            meta["imported_from_backend"] = meta.get("backend", "")
            meta["backend"] = backend
        items.append(MemoryItem(rec["id"], rec["kind"], rec["key"], rec["text"], meta))
        existing.add(rec["id"])
        if keep_values and rec.get("values"):
            vals = {k: v for k, v in rec["values"].items() if v is not None or k.startswith("last_")}
            if any(vals.get(k) for k in ("q1", "q2", "n1", "n2")):
                values[rec["id"]] = vals
    if not items:
        return 0
    store.add(items)
    if values:
        digest = hashlib.sha256(json.dumps(sorted(values.items()), sort_keys=True).encode()).hexdigest()[:16]
        store.values.set_values(f"import:{Path(path).name}:{digest}", values)
        store.sync_values(list(values))
    return len(items)
