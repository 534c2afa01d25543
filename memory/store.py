"""The memory bank: Chroma is the durable store, an in-process numpy mirror answers queries.

Items (`MemoryItem`) have a kind (seed / experience / trace / best_practice), a short ``key`` that is
embedded (similarity is computed on it), the ``text`` shown in prompts (code, for traces) and flat
metadata. Values (Q1/Q2) live in the `ValueLedger` (``values.jsonl``), not in Chroma; `sync_values`
mirrors them into item metadata for inspection.

Storage and retrieval (measurements in docs/memory.md):

* Chroma holds every item: id, document (= text), our own embedding of the key (the collection has no
  embedding function, cosine space) and metadata. ``path/chroma`` with a PersistentClient when one
  process owns the memory, or a ``chroma run`` server reached with an HttpClient when several do.
* Each process keeps a mirror of what queries need: the embedding matrix and integer codes of kind,
  backend, task and parent per row. ``query`` is a dot product over the matrix, a mask for the filters
  (lookup tables over the codes) and a partial sort, with any filter for free. Up to 20k rows it is
  exact; beyond, rows are first scored in a 128-d PCA projection and the best max(8k, 1024) passing
  the filters are rescored exactly (a third of the memory traffic; recall measured by the benchmark).
  Chroma's own ``where`` filters took 28-540 ms at 10k-100k, and its HNSW lost recall at 100k.
* Full items (text + metadata) come from an LRU cache, filled on add and on first fetch; fetching 120
  items from Chroma costs ~6.5 ms at 100k, so a warm pool costs nothing.
* The mirror is loaded lazily (first query/find/count) and kept current by our own writes. Loading it
  from Chroma takes ~10-19 s at 100k items, so an embedded store saves it on close as
  ``mirror-<collection>.npz`` and reuses it when Chroma's count still matches (the first write after
  an open deletes it, so a crash never leaves a stale one). In server
  mode other processes write too: the mirror checks Chroma's count at most every ``refresh_interval``
  seconds (a count costs ~9 ms at 100k) and fetches rows added since (Chroma returns rows in
  insertion order); ``refresh()`` forces it.
* Opening the collection (embedded under a directory lock, or served) and riding out Chroma's
  transient read race is `memory/chroma.py`.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import re
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np

from .knowledge import _as_list
from .chroma import (  # noqa: F401
    MemoryLockedError,
    MemoryStoreError,
    dir_bump,
    dir_generation,
    dir_holders,
    open_collection,
    release_dir_lock,
)
from .embeddings import DIM, Embedder, get_embedder
from .value_service import LedgerOwnerError, open_ledger

KINDS = ("seed", "experience", "trace", "best_practice")
VALUE_KEYS = ("q1", "q2", "n1", "n2", "last_r1", "last_r2")
_RESERVED = ("kind", "key")  # stored in Chroma metadata next to the item's own metadata
_BATCH = 1000  # rows per Chroma write/read (its max batch is 5461; large id lists overflow sqlite variables)
DEFAULT_COLLECTION = "evokernel-memory"
# two-stage search (see MemoryStore.search): from this many rows on, score all rows in a PCA_DIM-dim
# projection, then rescore the best max(COARSE_FACTOR * k, COARSE_POOL) exactly
COARSE_MIN = 20000
PCA_DIM = 128
COARSE_FACTOR = 8
COARSE_POOL = 1024


@dataclass
class MemoryItem:
    id: str
    kind: str  # one of KINDS
    key: str  # short text that is embedded; similarity is computed on it
    text: str  # full content shown in prompts (code for traces)
    meta: dict[str, Any] = field(default_factory=dict)  # flat scalars/str lists only


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def sanitize_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Make metadata acceptable to Chroma: drop None and empty lists, JSON-encode dicts and nested
    lists, turn tuples/sets into lists, numpy scalars into Python ones, anything else into str."""
    out: dict[str, Any] = {}
    for k, v in meta.items():
        k = str(k)
        if v is None:
            continue
        if isinstance(v, np.generic):
            v = v.item()
        if isinstance(v, bool) or isinstance(v, (int, str)):
            out[k] = v
        elif isinstance(v, float):
            out[k] = v if math.isfinite(v) else str(v)
        elif isinstance(v, dict):
            out[k] = json.dumps(v, sort_keys=True, default=str)
        elif isinstance(v, (list, tuple, set, frozenset)):
            seq = sorted(v, key=str) if isinstance(v, (set, frozenset)) else list(v)
            seq = [x for x in seq if x is not None]
            if not seq:
                continue
            if all(isinstance(x, str) for x in seq):
                out[k] = seq
            elif all(isinstance(x, bool) for x in seq) or all(isinstance(x, int) and not isinstance(x, bool)
                                                                for x in seq):
                out[k] = seq
            elif all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in seq):
                out[k] = [float(x) for x in seq]
            else:
                out[k] = json.dumps(seq, default=str)
        else:
            out[k] = str(v)
    return out


class _Codes:
    """String <-> small integer, for vectorised filtering of the mirror."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}

    def code(self, name: str) -> int:
        c = self.index.get(name)
        if c is None:
            c = self.index[name] = len(self.names)
            self.names.append(name)
        return c

    def get(self, name: str) -> int:
        return self.index.get(name, -1)


def _blas_one_thread() -> Any:
    """A context that runs BLAS on one thread (threadpoolctl), or a no-op without threadpoolctl."""
    global _BLAS_CTL
    if _BLAS_CTL is None:
        try:
            from threadpoolctl import ThreadpoolController

            _BLAS_CTL = ThreadpoolController()
        except Exception:  # not installed, or the BLAS cannot be introspected
            _BLAS_CTL = False
    if _BLAS_CTL is False:
        return contextlib.nullcontext()
    return _BLAS_CTL.limit(limits=1, user_api="blas")


_BLAS_CTL: Any = None


class MemoryStore:
    """The memory bank; see the module docstring."""

    def __init__(self, path: str | Path | None = None, url: str | None = None, *,
                 collection: str = DEFAULT_COLLECTION, embedder: Embedder | None = None,
                 refresh_interval: float = 2.0, item_cache: int = 20000, alpha: float = 0.1,
                 search: str = "auto"):
        if path is None:
            raise MemoryStoreError("a memory directory is required (it holds the value ledger, and the Chroma "
                                   "files unless a server URL is given)")
        self.path = Path(path).expanduser()
        self.url = url
        self.collection_name = collection
        self.embedder = embedder or get_embedder()
        self.refresh_interval = refresh_interval
        self.item_cache_size = item_cache
        if search not in ("auto", "exact"):
            raise ValueError(f"search must be 'auto' or 'exact', got {search!r}")
        self.search_mode = search
        self._lock_key: str | None = None
        self._closed = False
        self._mutex = threading.RLock()
        try:
            self.path.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise MemoryStoreError(f"cannot create the memory directory {self.path}: {e}") from None
        if not self.path.is_dir() or not os.access(self.path, os.W_OK | os.X_OK):
            raise MemoryStoreError(f"memory directory {self.path} is not a writable directory")

        self._client, self._col, self._lock_key = open_collection(
            self.path, url, collection, {"evokernel": "memory", "embedding": "all-MiniLM-L6-v2", "dim": DIM})
        try:
            # the file under flock, or through its owner on a Ray cluster (EVOKERNEL_VALUE_LEDGER)
            self.values = open_ledger(self.path / "values.jsonl", alpha=alpha)
        except (LedgerOwnerError, ValueError) as e:  # no owner reachable; a directory the owner does not serve
            self._release()
            raise MemoryStoreError(str(e)) from None

        # the mirror (loaded on first use)
        self._loaded = False
        self._n = 0  # rows in the mirror (deleted rows stay, marked dead)
        self._synced = 0  # Chroma's count when the mirror was last known to match it
        self._checked = 0.0  # monotonic time of the last count check (server mode)
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._emb = np.zeros((0, DIM), dtype=np.float32)
        self._kind = np.zeros(0, dtype=np.int32)
        self._backend = np.zeros(0, dtype=np.int32)
        self._task = np.zeros(0, dtype=np.int32)
        self._parent = np.zeros(0, dtype=np.int32)
        self._alive = np.zeros(0, dtype=bool)
        self._kinds, self._backends, self._tasks, self._parents = _Codes(), _Codes(), _Codes(), _Codes()
        self._items: OrderedDict[str, MemoryItem] = OrderedDict()
        self._proj: np.ndarray | None = None  # DIM x PCA_DIM basis of the coarse stage
        self._low = np.zeros((0, PCA_DIM), dtype=np.float32)  # rows projected on it
        self._low_n = 0  # rows [0, _low_n) of _low are current
        self._fit_n = 0  # rows when the basis was fitted
        self._gen = 0  # the directory's write generation this mirror reflects (stores sharing a dir in-process)
        self._dirty = False  # written since open: the mirror snapshot on disk is gone / out of date

    # --- lifecycle ------------------------------------------------------------------------------

    @property
    def server_mode(self) -> bool:
        return bool(self.url)

    def _release(self) -> None:
        if self._lock_key is not None:
            release_dir_lock(self._lock_key)
            self._lock_key = None

    def close(self) -> None:
        """Save the mirror snapshot (embedded mode), release the directory lock and drop the client; the
        store cannot be used afterwards."""
        if self._closed:
            return
        try:
            self._save_snapshot()
        except Exception:
            pass  # the snapshot is only a cache: the next open rebuilds the mirror from Chroma
        self._closed = True
        self._items.clear()
        self._col = None
        client, self._client = self._client, None
        try:  # stops Chroma's system once its last client closes: its sqlite and segment files are released
            close = getattr(client, "close", None)
            if close is not None:
                close()
        except Exception:
            pass
        self._release()

    def __enter__(self) -> "MemoryStore":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryStoreError("the memory store is closed")

    # --- the mirror -----------------------------------------------------------------------------

    def _grow(self, need: int) -> None:
        cap = len(self._emb)
        if need <= cap:
            return
        new = max(need, 1024, int(cap * 1.5))

        def grow(a: np.ndarray, fill: Any) -> np.ndarray:
            b = np.full((new,) + a.shape[1:], fill, dtype=a.dtype)
            b[: self._n] = a[: self._n]
            return b

        self._emb = grow(self._emb, 0.0)
        self._kind, self._backend = grow(self._kind, -1), grow(self._backend, -1)
        self._task, self._parent = grow(self._task, -1), grow(self._parent, -1)
        self._alive = grow(self._alive, False)
        if self._proj is not None:
            self._low = grow(self._low, 0.0)

    def _mirror_rows(self, ids: Sequence[str], embs: np.ndarray, metas: Sequence[dict[str, Any]]) -> None:
        """Insert or overwrite mirror rows."""
        self._grow(self._n + len(ids))
        for i, item_id in enumerate(ids):
            r = self._row.get(item_id)
            if r is None:
                r = self._row[item_id] = self._n
                self._ids.append(item_id)
                self._n += 1
            m = metas[i] or {}
            self._emb[r] = embs[i]
            if r < self._low_n:  # an overwritten row that was already projected
                self._low[r] = embs[i] @ self._proj
            self._kind[r] = self._kinds.code(str(m.get("kind", "")))
            self._backend[r] = self._backends.code(str(m.get("backend", "")))
            self._task[r] = self._tasks.code(str(m.get("task", "")))
            self._parent[r] = self._parents.code(str(m.get("parent", "")))
            self._alive[r] = True

    def _fetch_rows(self, offset: int) -> int:
        """Mirror Chroma's rows from ``offset`` on (Chroma returns rows in insertion order)."""
        got = 0
        while True:
            res = self._col.get(offset=offset + got, limit=_BATCH, include=["embeddings", "metadatas"])
            ids = res["ids"]
            if not ids:
                return got
            self._mirror_rows(ids, np.asarray(res["embeddings"], dtype=np.float32), res["metadatas"])
            got += len(ids)
            if len(ids) < _BATCH:
                return got

    def _ensure_loaded(self) -> None:
        self._check_open()
        with self._mutex:
            if not self._loaded:
                self._gen = dir_generation(self._lock_key)
                if not self._load_snapshot():
                    self._fetch_rows(0)
                self._synced = int(self._alive[: self._n].sum())
                self._checked = time.monotonic()
                self._loaded = True
            elif self.server_mode and time.monotonic() - self._checked >= self.refresh_interval:
                self.refresh()
            elif not self.server_mode and self._gen != dir_generation(self._lock_key):
                self.refresh()  # another store of this process wrote to the same directory

    # --- the mirror snapshot (embedded mode) ------------------------------------------------------
    # Loading the mirror from Chroma takes ~10 s at 100k items, so an embedded store saves it on close
    # (mirror-<collection>.npz) and the next open uses it when Chroma's count still matches. The first
    # write after opening deletes the snapshot before touching Chroma, so a crash can never leave a
    # snapshot that disagrees with Chroma.

    @property
    def _snapshot_path(self) -> Path:
        return self.path / f"mirror-{self.collection_name}.npz"

    def _load_snapshot(self) -> bool:
        if self.server_mode or not self._snapshot_path.exists():
            return False
        try:
            with np.load(self._snapshot_path, allow_pickle=False) as z:
                header = json.loads(str(z["header"]))
                if header.get("version") != 1 or header.get("dim") != DIM or header["count"] != self._col.count():
                    return False
                arrays = {k: z[k] for k in ("emb", "kind", "backend", "task", "parent")}
        except Exception:
            return False
        ids = header["ids"]
        n = len(ids)
        if any(len(a) != n for a in arrays.values()):
            return False
        self._reset_mirror()
        self._grow(n)
        self._emb[:n] = arrays["emb"]
        for name, codes in (("kind", self._kinds), ("backend", self._backends), ("task", self._tasks),
                            ("parent", self._parents)):
            codes.names = list(header[name])
            codes.index = {v: i for i, v in enumerate(codes.names)}
            getattr(self, f"_{name}")[:n] = arrays[name]
        self._alive[:n] = True
        self._ids = list(ids)
        self._row = {i: r for r, i in enumerate(ids)}
        self._n = n
        return True

    def _save_snapshot(self) -> None:
        if (self.server_mode or not self._loaded or self._closed or dir_holders(self._lock_key) != 1
                or self._gen != dir_generation(self._lock_key)):
            return
        if self._snapshot_path.exists() and not self._dirty:
            return
        rows = np.flatnonzero(self._alive[: self._n])
        header = {"version": 1, "dim": DIM, "count": int(len(rows)), "ids": [self._ids[r] for r in rows],
                  "kind": self._kinds.names, "backend": self._backends.names, "task": self._tasks.names,
                  "parent": self._parents.names}
        tmp = self._snapshot_path.with_name(self._snapshot_path.name + ".tmp.npz")
        np.savez(tmp, header=np.array(json.dumps(header)), emb=self._emb[rows], kind=self._kind[rows],
                 backend=self._backend[rows], task=self._task[rows], parent=self._parent[rows])
        os.replace(tmp, self._snapshot_path)

    def _will_write(self) -> None:
        """Called before every write to Chroma: drop the (now stale) snapshot."""
        if not self._dirty and not self.server_mode:
            self._snapshot_path.unlink(missing_ok=True)
        self._dirty = True

    def _wrote(self) -> None:
        """Called after every write: bump the directory's generation; this mirror is current."""
        if not self.server_mode:
            self._gen = dir_bump(self._lock_key)

    def refresh(self) -> int:
        """Pick up items other processes added (server mode); returns the number of new rows. Also folds
        new ledger lines."""
        self._check_open()
        with self._mutex:
            self.values.refresh()
            if not self._loaded:
                self._ensure_loaded()
                return self._n
            count = self._col.count()
            self._checked = time.monotonic()
            self._gen = dir_generation(self._lock_key)
            if count == self._synced:
                return 0
            before = self._n
            if count > self._synced:
                self._fetch_rows(self._synced)
            alive = int(self._alive[: self._n].sum())
            if alive != count:  # deletions elsewhere, or rows out of order: rebuild
                self._reset_mirror()
                self._fetch_rows(0)
                alive = int(self._alive[: self._n].sum())
            self._synced = alive
            return self._n - before

    def _reset_mirror(self) -> None:
        self._n = 0
        self._low_n = 0
        self._ids, self._row = [], {}
        self._alive[:] = False
        self._items.clear()

    # --- the item cache ---------------------------------------------------------------------------

    def _cache(self, item: MemoryItem) -> None:
        if self.item_cache_size <= 0:
            return
        self._items[item.id] = item
        self._items.move_to_end(item.id)
        while len(self._items) > self.item_cache_size:
            self._items.popitem(last=False)

    @staticmethod
    def _to_item(item_id: str, doc: str | None, meta: dict[str, Any] | None) -> MemoryItem:
        m = dict(meta or {})
        kind = str(m.pop("kind", ""))
        key = str(m.pop("key", ""))
        return MemoryItem(id=item_id, kind=kind, key=key, text=doc or "", meta=m)

    # --- writing --------------------------------------------------------------------------------

    def add(self, items: Sequence[MemoryItem], *, embeddings: np.ndarray | None = None) -> None:
        """Upsert items (idempotent by id), embedding their keys in batches. ``embeddings`` (one row per
        item, L2-normalised) skips the embedding model, e.g. for imports of known vectors or benchmarks."""
        self._check_open()
        items = list(items)
        if not items:
            return
        if len({it.id for it in items}) != len(items):
            last = {it.id: it for it in items}  # the last version of a repeated id wins
            items = list(last.values())
            embeddings = None  # rows no longer align with items: embed the keys
        for it in items:
            if not isinstance(it.id, str) or not it.id:
                raise ValueError(f"memory item id must be a non-empty string, got {it.id!r}")
            if it.kind not in KINDS:
                raise ValueError(f"item {it.id!r}: kind must be one of {KINDS}, got {it.kind!r}")
        if embeddings is not None:
            embeddings = np.asarray(embeddings, dtype=np.float32)
            if embeddings.shape != (len(items), DIM):
                raise ValueError(f"embeddings must have shape ({len(items)}, {DIM}), got {embeddings.shape}")
        with self._mutex:
            self._ensure_loaded()
            if self.server_mode:
                self.refresh()  # so the rows we append follow everything already in Chroma
            self._will_write()
            for s in range(0, len(items), _BATCH):
                batch = items[s:s + _BATCH]
                embs = embeddings[s:s + _BATCH] if embeddings is not None else self.embedder.embed([it.key for it in batch])
                metas = []
                for it in batch:
                    m = sanitize_meta(it.meta)
                    m["kind"], m["key"] = it.kind, it.key
                    metas.append(m)
                self._col.upsert(ids=[it.id for it in batch], embeddings=embs, documents=[it.text for it in batch],
                                 metadatas=metas)
                new = sum(1 for it in batch if it.id not in self._row or not self._alive[self._row[it.id]])
                self._mirror_rows([it.id for it in batch], embs, metas)
                self._synced += new
                for it, m in zip(batch, metas):
                    self._cache(self._to_item(it.id, it.text, m))
            self._wrote()

    def delete(self, ids: Sequence[str]) -> int:
        """Remove items (their ledger lines stay); returns how many existed."""
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            present = [i for i in dict.fromkeys(ids) if i in self._row and self._alive[self._row[i]]]
            if present:
                self._will_write()
            for s in range(0, len(present), _BATCH):
                self._col.delete(ids=present[s:s + _BATCH])
            for i in present:
                self._alive[self._row[i]] = False
                self._items.pop(i, None)
            self._synced -= len(present)
            if present:
                self._wrote()
            return len(present)

    def sync_values(self, ids: Sequence[str]) -> None:
        """Copy q1, q2, n1, n2, last_r1, last_r2 from the ledger into the items' metadata (skipping ids
        that are not in the store). The ledger stays the truth; this is for inspection and for
        consumers that only read Chroma."""
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            self.values.refresh()
            present = [i for i in dict.fromkeys(ids) if i in self._row and self._alive[self._row[i]]]
            for s in range(0, len(present), _BATCH):
                batch = present[s:s + _BATCH]
                metas = []
                for i in batch:
                    v = self.values.get(i)
                    m = {k: (getattr(v, k) if v is not None else (0.0 if k[0] == "q" else 0 if k[0] == "n" else None))
                         for k in VALUE_KEYS}
                    metas.append(m)  # None deletes the key in Chroma (last_r* of a stage never used)
                self._col.update(ids=batch, metadatas=metas)
                for i, m in zip(batch, metas):
                    cached = self._items.get(i)
                    if cached is not None:
                        for k, v in m.items():
                            if v is None:
                                cached.meta.pop(k, None)
                            else:
                                cached.meta[k] = v

    # --- reading --------------------------------------------------------------------------------

    def get(self, ids: Sequence[str]) -> list[MemoryItem]:
        """Items by id, in the order asked; missing ids are skipped."""
        self._check_open()
        ids = list(ids)
        with self._mutex:
            missing = [i for i in dict.fromkeys(ids) if i not in self._items]
            fetched: dict[str, MemoryItem] = {}
            for s in range(0, len(missing), _BATCH):
                res = self._col.get(ids=missing[s:s + _BATCH], include=["documents", "metadatas"])
                for i, doc, meta in zip(res["ids"], res["documents"], res["metadatas"]):
                    fetched[i] = self._to_item(i, doc, meta)
            out = []
            for i in ids:
                it = self._items.get(i) or fetched.get(i)
                if it is not None:
                    out.append(it)
            for it in fetched.values():
                self._cache(it)
            return out

    def _mask(self, kinds: Sequence[str] | None = None, backend: str | None = None,
              exclude_tasks: Sequence[str] = (), task: str | None = None, parent: str | None = None) -> np.ndarray:
        n = self._n
        mask = self._alive[:n].copy()
        if kinds is not None:
            lut = np.zeros(len(self._kinds.names) + 1, dtype=bool)
            for k in kinds:
                c = self._kinds.get(k)
                if c >= 0:
                    lut[c] = True
            mask &= lut[self._kind[:n]]
        if backend is not None:
            mask &= self._backend[:n] == self._backends.get(backend)
        if task is not None:
            mask &= self._task[:n] == self._tasks.get(task)
        if parent is not None:
            mask &= self._parent[:n] == self._parents.get(parent)
        if exclude_tasks:
            codes = [c for c in (self._tasks.get(t) for t in exclude_tasks) if c >= 0]
            if codes:
                lut = np.ones(len(self._tasks.names) + 1, dtype=bool)
                lut[codes] = False
                mask &= lut[self._task[:n]]
        return mask

    def _ensure_projection(self, n: int) -> None:
        """Fit the coarse stage's basis (the top PCA_DIM eigenvectors of the uncentred second moment of
        a sample of rows, so that dot products are preserved as well as possible) when there is none or
        the mirror has grown 4x since; project rows not projected yet."""
        if self._proj is None or n > 4 * self._fit_n:
            rows = np.flatnonzero(self._alive[:n])
            if len(rows) > 20000:
                rows = np.sort(np.random.default_rng(0).choice(rows, 20000, replace=False))
            x = self._emb[rows].astype(np.float64)
            _, vecs = np.linalg.eigh(x.T @ x)
            self._proj = np.ascontiguousarray(vecs[:, ::-1][:, :PCA_DIM], dtype=np.float32)
            self._low = np.zeros((len(self._emb), PCA_DIM), dtype=np.float32)
            self._low_n, self._fit_n = 0, n
        if self._low_n < n:
            if len(self._low) < len(self._emb):
                grown = np.zeros((len(self._emb), PCA_DIM), dtype=np.float32)
                grown[: self._low_n] = self._low[: self._low_n]
                self._low = grown
            self._low[self._low_n:n] = self._emb[self._low_n:n] @ self._proj
            self._low_n = n

    def search(self, embedding: np.ndarray, k: int, *, kinds: Sequence[str] | None = None,
               backend: str | None = None, exclude_tasks: Sequence[str] = ()) -> list[tuple[str, float]]:
        """(id, cosine similarity) of the ``k`` items nearest to ``embedding`` that pass the filters, best
        first; no item is fetched.

        Up to COARSE_MIN rows: exact (one matrix-vector product over all rows). Beyond, unless the store
        was opened with ``search="exact"``: every row is scored in a 128-d PCA projection (a third of the
        memory traffic), and the best max(8k, 1024) rows passing the filters are rescored exactly; the
        similarities returned are always exact. Recall of the top 120 against the exact search is
        measured by evals/bench/bench_retrieval.py."""
        if k <= 0:
            return []
        with self._mutex:
            self._ensure_loaded()
            n = self._n
            if n == 0:
                return []
            q = np.asarray(embedding, dtype=np.float32).reshape(DIM)
            mask = self._mask(kinds, backend, exclude_tasks)
            valid = int(np.count_nonzero(mask))
            if valid == 0:
                return []
            k = min(k, valid)
            ids = self._ids
            pool = max(COARSE_FACTOR * k, COARSE_POOL)
            # matrix-vector products are memory bound: a second BLAS thread barely helps on an idle
            # machine and doubles the time when the other core is busy (measured: 6 vs 12 ms at 100k)
            if self.search_mode == "auto" and n >= COARSE_MIN and valid > pool:
                with _blas_one_thread():
                    self._ensure_projection(n)
                    coarse = self._low[:n] @ (q @ self._proj)
                np.putmask(coarse, ~mask, -np.inf)
                cand = np.argpartition(-coarse, pool - 1)[:pool]
                exact = self._emb[cand] @ q
                order = np.argsort(-exact, kind="stable")[:k]
                return [(ids[cand[o]], float(exact[o])) for o in order]
            with _blas_one_thread():
                sims = self._emb[:n] @ q
            np.putmask(sims, ~mask, -np.inf)
            top = np.argpartition(-sims, k - 1)[:k] if k < n else np.arange(n)
            top = top[np.argsort(-sims[top], kind="stable")][:k]
            return [(ids[r], float(sims[r])) for r in top]

    def query_ids(self, key: str, k: int, *, kinds: Sequence[str] | None = None, backend: str | None = None,
                  exclude_tasks: Sequence[str] = ()) -> list[tuple[str, float]]:
        """Like `query`, but only ids and similarities (the cheapest way to build a retrieval pool)."""
        self._check_open()
        return self.search(self.embedder.embed_one(key), k, kinds=kinds, backend=backend, exclude_tasks=exclude_tasks)

    def query(self, key: str, k: int, *, kinds: Sequence[str] | None = None, backend: str | None = None,
              exclude_tasks: Sequence[str] = ()) -> list[tuple[MemoryItem, float]]:
        """The ``k`` items whose keys are most similar to ``key`` (cosine), best first, optionally only of
        ``kinds``, of ``backend``, and not from ``exclude_tasks``."""
        hits = self.query_ids(key, k, kinds=kinds, backend=backend, exclude_tasks=exclude_tasks)
        items = {it.id: it for it in self.get([i for i, _ in hits])}
        return [(items[i], s) for i, s in hits if i in items]

    def find(self, *, kind: str | None = None, task: str | None = None, parent: str | None = None,
             backend: str | None = None, limit: int | None = None) -> list[MemoryItem]:
        """Items whose metadata match every given field, in insertion order (oldest first)."""
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            mask = self._mask([kind] if kind is not None else None, backend, (), task, parent)
            rows = np.flatnonzero(mask)
            if limit is not None:
                rows = rows[: max(limit, 0)]
            return self.get([self._ids[r] for r in rows])

    def find_where(self, kind: str, *, limit: int = 1000, **fields: str | int | float | bool) -> list[MemoryItem]:
        """Items of ``kind`` whose metadata equal every field, by one Chroma metadata query: for fields the
        mirror does not index (``task_key``); at most ``limit``, in no particular order."""
        self._check_open()
        clauses = [{"kind": kind}] + [{k: v} for k, v in fields.items()]
        where = {"$and": clauses} if len(clauses) > 1 else clauses[0]
        with self._mutex:
            res = self._col.get(where=where, limit=limit, include=["documents", "metadatas"])
            items = [self._to_item(i, doc, meta) for i, doc, meta in zip(res["ids"], res["documents"], res["metadatas"])]
            for it in items:
                self._cache(it)
            return items

    def knowledge(self, backend: str, *, apis: Iterable[str] = (), category: str | None = None,
                  limit: int = 4, ops: Iterable[str] = (), name: str = "") -> list[MemoryItem]:
        """Seed API knowledge, looked up without learned values: first the backend's core items (their
        categories contain "*": the candidate format), then the other seed items ranked by how specifically
        they match the task (:mod:`.knowledge`: the traced graph's ``ops``, words of the task's ``name``, the
        ``category`` weighted by how few categories an item lists, the ``apis`` seen in retrieved code), best
        first and ties in file order; items that match nothing are left out; at most ``limit``."""
        from .knowledge import rank_knowledge

        seeds = self.find(kind="seed", backend=backend)
        wanted = {_norm_api(a) for a in apis}
        core = [s for s in seeds if "*" in _as_list(s.meta.get("categories"))]
        rest = [s for s in seeds if s not in core]
        ranked = rank_knowledge(rest, ops=ops, category=category, name=name, limit=limit,
                                apis_of=lambda s: wanted & _api_forms(_as_list(s.meta.get("apis"))))
        return (core + ranked)[:limit]

    def ensure_seed(self, backend: str) -> int:
        """Load the backend's seed knowledge (M0) from memory/seed/<family>/; items whose content is
        unchanged are skipped, changed ones replaced, ones no longer shipped removed. Returns the number
        of items added or replaced.

        Backends of one family share the item ids (``seed:ascend:<stem>`` for ascend-sim and ascend): an
        item loaded for the other backend of the family is re-tagged with this one (same id, so its learned
        values stay), and the store's per-backend lookups then find it."""
        from .seed import family, load_seed

        items = load_seed(backend)
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            prefix = f"seed:{family(backend)}:"
            ids = [i for kind in ("seed", "best_practice") for i in self.ids(kind) if i.startswith(prefix)]
            existing = {it.id: it for it in self.get(ids) if it.meta.get("source") == "seed"}
            todo = [it for it in items if existing.get(it.id) is None
                    or existing[it.id].meta.get("content_hash") != it.meta.get("content_hash")
                    or existing[it.id].meta.get("backend") != it.meta.get("backend")]
            if todo:
                self.add(todo)
            stale = [i for i in existing if i not in {it.id for it in items}]
            if stale:
                self.delete(stale)
            return len(todo)

    def count(self, kind: str | None = None) -> int:
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            return int(self._mask([kind] if kind is not None else None).sum())

    def ids(self, kind: str | None = None) -> list[str]:
        """Every item id (optionally of one kind), in insertion order."""
        with self._mutex:
            self._ensure_loaded()
            return [self._ids[r] for r in np.flatnonzero(self._mask([kind] if kind is not None else None))]

    def stats(self) -> dict[str, Any]:
        """Counts per kind, backend and task, and a summary of the values."""
        self._check_open()
        with self._mutex:
            self._ensure_loaded()
            self.values.refresh()
            alive = self._alive[: self._n]

            def counts(codes: np.ndarray, names: _Codes) -> dict[str, int]:
                c = np.bincount(codes[: self._n][alive], minlength=len(names.names)) if alive.any() else []
                return {names.names[i]: int(v) for i, v in enumerate(c) if v}

            by_task = counts(self._task, self._tasks)
            by_task.pop("", None)
            ids = set(self._ids[r] for r in np.flatnonzero(alive))
            vals = [(i, v) for i, v in self.values.state.items.items() if i in ids]
            used1 = [v.q1 for _, v in vals if v.n1]
            used2 = [v.q2 for _, v in vals if v.n2]
            norm = self.values.state.normalizer
            return {
                "path": str(self.path),
                "server": self.url or "",
                "collection": self.collection_name,
                "items": int(alive.sum()),
                "by_kind": counts(self._kind, self._kinds),
                "by_backend": counts(self._backend, self._backends),
                "by_task": dict(sorted(by_task.items(), key=lambda t: -t[1])),
                "values": {
                    "attempts": len(self.values.state.attempts),
                    "items_with_q1": len(used1),
                    "items_with_q2": len(used2),
                    "q1_mean": float(np.mean(used1)) if used1 else 0.0,
                    "q2_mean": float(np.mean(used2)) if used2 else 0.0,
                    "q1_max": float(np.max(used1)) if used1 else 0.0,
                    "q2_max": float(np.max(used2)) if used2 else 0.0,
                    "r2_normalizer": {"n": norm.n, "mean": norm.mean, "sigma": norm.sigma},
                },
            }


def _norm_api(name: str) -> str:
    return " ".join(str(name).replace("#", " #").split()).replace("# ", "#").strip()


def _api_forms(apis: Iterable[str]) -> set[str]:
    """The names under which a seed item's APIs may show up in code: the API as written, OpenMP
    directives with and without ``#pragma`` and by their first word (``#pragma omp parallel`` for
    "omp parallel for"), and the leading identifier of a call-like API ("reduction" for "reduction(+")."""
    forms: set[str] = set()
    for api in apis:
        a = _norm_api(api)
        forms.add(a)
        bare = a[len("#pragma "):] if a.startswith("#pragma ") else a
        if bare.startswith("omp "):
            words = bare.split()
            forms.update({bare, "#pragma " + bare, "#pragma omp " + words[1] if len(words) > 1 else bare})
        m = re.match(r"[A-Za-z_]\w*", a)
        if m and m.end() < len(a) and a[m.end()] not in " ":
            forms.add(m.group(0))
    return forms
