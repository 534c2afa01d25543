"""Where the memory's items live: a Chroma collection, embedded or served, and how it is opened.

* Embedded: a ``PersistentClient`` on ``path/chroma``. Such a directory is not safe for two processes (it
  corrupts the HNSW files), so opening one takes an ``fcntl`` lock on ``path/.lock``; a second process
  gets `MemoryLockedError` telling it to use a Chroma server. Stores opened on the same directory in one
  process share the lock (and a write generation, so each sees the others' writes).
* Served: an ``HttpClient`` on a ``chroma run`` server, for several processes (eval shards, cluster
  nodes).

`ChromaCollection` wraps the collection handle. Chroma 1.5's local segment manager has a read race: a
read (``get`` with embeddings, ``query``) that arrives while another client's first write to a
collection is building its vector index fails with ``InternalError: Error creating hnsw segment
reader: Nothing found on disk``. The window is the length of that write (~10 ms); measured with two
clients on one server, 8 trials in 20 hit it (tests/memory/test_chroma.py reproduces it). Every call
is retried on that error with a short backoff for up to ``patience`` seconds; an error that outlasts
it (the index really missing) becomes a `MemoryStoreError` naming the collection. Other errors are not
retried.
"""
from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlparse

from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_exponential

log = logging.getLogger(__name__)

# substrings of Chroma errors that are a race with another client's write, gone once that write ends
TRANSIENT = ("Nothing found on disk",)


class MemoryStoreError(RuntimeError):
    """The memory cannot be opened or used (bad URL, unreachable server, unwritable directory, ...)."""


class MemoryLockedError(MemoryStoreError):
    """Another process has the memory directory open with an embedded (PersistentClient) Chroma."""


# --- directory locks (one per directory per process; shared by the stores of that process) --------

# realpath -> [lock file, number of stores of this process on the directory, write generation]
_DIR_LOCKS: dict[str, list[Any]] = {}
_DIR_LOCKS_GUARD = threading.Lock()


def acquire_dir_lock(path: Path) -> str:
    real = os.path.realpath(path)
    with _DIR_LOCKS_GUARD:
        held = _DIR_LOCKS.get(real)
        if held is not None:
            held[1] += 1
            return real
        lock_path = Path(real) / ".lock"
        try:
            f = open(lock_path, "a+")
        except OSError as e:
            raise MemoryStoreError(f"cannot create the lock file {lock_path}: {e}") from None
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.seek(0)
            owner = f.read().strip() or "?"
            f.close()
            raise MemoryLockedError(
                f"memory directory {real} is already open in another process (pid {owner}). An embedded Chroma "
                "(PersistentClient) is not safe for several processes. To share one memory, serve it: "
                f"`chroma run --path {Path(real) / 'chroma'} --host 127.0.0.1 --port 8000`, then open it in every "
                f"process with MemoryStore({real!r}, url='http://127.0.0.1:8000') "
                "(CLI: --server http://127.0.0.1:8000 or EVOKERNEL_CHROMA_URL)") from None
        f.seek(0)
        f.truncate()
        f.write(f"{os.getpid()}\n")
        f.flush()
        _DIR_LOCKS[real] = [f, 1, 0]
        return real


def release_dir_lock(real: str) -> None:
    with _DIR_LOCKS_GUARD:
        held = _DIR_LOCKS.get(real)
        if held is None:
            return
        held[1] -= 1
        if held[1] <= 0:
            f = held[0]
            del _DIR_LOCKS[real]
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            finally:
                f.close()


def dir_generation(real: str | None) -> int:
    held = _DIR_LOCKS.get(real) if real else None
    return held[2] if held else 0


def dir_bump(real: str | None) -> int:
    with _DIR_LOCKS_GUARD:
        held = _DIR_LOCKS.get(real) if real else None
        if held is None:
            return 0
        held[2] += 1
        return held[2]


def dir_holders(real: str | None) -> int:
    held = _DIR_LOCKS.get(real) if real else None
    return held[1] if held else 0


def parse_url(url: str) -> tuple[str, int, bool]:
    u = urlparse(url if "://" in url else f"http://{url}")
    if u.scheme not in ("http", "https") or not u.hostname:
        raise MemoryStoreError(f"bad Chroma server URL {url!r}: expected http://HOST:PORT, e.g. http://127.0.0.1:8000")
    try:
        port = u.port or (443 if u.scheme == "https" else 8000)
    except ValueError:
        raise MemoryStoreError(f"bad Chroma server URL {url!r}: the port is not a number") from None
    return u.hostname, port, u.scheme == "https"


def is_transient(e: BaseException) -> bool:
    """True for Chroma's read-during-first-write race (see the module docstring)."""
    return type(e).__name__ == "InternalError" and any(t in str(e) for t in TRANSIENT)


class ChromaCollection:
    """A Chroma collection whose calls ride out the transient read race (module docstring)."""

    # all safe to repeat (upsert, update and delete are idempotent; add skips ids that exist)
    CALLS = ("get", "count", "query", "add", "upsert", "update", "delete")

    def __init__(self, col: Any, *, patience: float = 15.0):
        self._col = col
        self.patience = patience
        self.retries = 0  # calls repeated because of the race (stats, tests)

    @property
    def name(self) -> str:
        return self._col.name

    def __getattr__(self, attr: str) -> Any:
        if attr not in self.CALLS:
            raise AttributeError(attr)
        fn = getattr(self._col, attr)
        return lambda *a, **k: self._call(attr, fn, *a, **k)

    def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        def note(state: Any) -> None:
            self.retries += 1
            log.debug("chroma %s on %s: %s; retrying", what, self._col.name, state.outcome.exception())

        try:
            for attempt in Retrying(retry=retry_if_exception(is_transient), before_sleep=note, reraise=True,
                                    wait=wait_exponential(multiplier=0.01, max=0.5),
                                    stop=stop_after_delay(self.patience)):
                with attempt:
                    return fn(*args, **kwargs)
        except Exception as e:
            if is_transient(e):
                raise MemoryStoreError(
                    f"Chroma could not read the vector index of collection {self._col.name!r} for "
                    f"{self.patience:g} s ({e}). Chroma's files for it are missing or the server lost them: "
                    "restart the Chroma server; if it persists, rebuild the memory from an export (evokernel memory "
                    "export / import)") from e
            raise
        raise AssertionError("unreachable")  # pragma: no cover


def open_collection(path: Path, url: str | None, name: str, metadata: dict[str, Any]
                    ) -> tuple[Any, ChromaCollection, str | None]:
    """Open (creating) collection ``name``: through the server at ``url``, or embedded in ``path/chroma``
    under the directory lock. Returns the client, the collection and the lock key (None when served);
    the caller releases the lock with `release_dir_lock`."""
    import chromadb
    from chromadb.config import Settings

    settings = Settings(anonymized_telemetry=False)
    lock_key = None
    if url:
        host, port, ssl = parse_url(url)
        try:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, settings=settings)
            client.heartbeat()
        except Exception as e:  # connection refused, DNS, TLS, wrong service...
            raise MemoryStoreError(
                f"cannot reach the Chroma server at {url}: {type(e).__name__}: {e}. Start one with "
                f"`chroma run --path {path / 'chroma'} --host {host} --port {port}`") from None
    else:
        lock_key = acquire_dir_lock(path)
        try:
            client = chromadb.PersistentClient(path=str(path / "chroma"), settings=settings)
        except Exception as e:
            release_dir_lock(lock_key)
            raise MemoryStoreError(f"cannot open the Chroma store in {path / 'chroma'}: {e}") from None
    try:
        # embedding_function=None: we embed ourselves; Chroma's default would try to download a model
        col = client.get_or_create_collection(name, embedding_function=None,
                                              configuration={"hnsw": {"space": "cosine"}}, metadata=metadata)
    except Exception as e:
        if lock_key is not None:
            release_dir_lock(lock_key)
        raise MemoryStoreError(f"cannot open collection {name!r}: {e}") from None
    return client, ChromaCollection(col), lock_key
