"""One owner of the value ledgers on a Ray cluster, and the client every process uses to reach it.

On one host, processes sharing a value ledger (``values.jsonl``) serialise their read-and-append with
``fcntl.flock`` (:class:`~evokernel.memory.values.ValueLedger`). Across hosts, where each node sees the eval
directory through a network filesystem, flock is no safe guarantee. There a single process owns every ledger
file: :class:`ValueLedgerOwner`, a named Ray actor. Every update goes through it, one call at a time (the
actor runs one method at a time): it catches up with the file, computes the entry from the fold at the end
of the file, appends it durably and folds it, with the ledger's own code (a ``ValueLedger`` per file on the
owner's node). A process holds a :class:`RemoteValueLedger` instead of a ``ValueLedger``: the same interface
(``record``, ``set_values``, ``refresh``, ``applied``, ``get``, ``q``, ``values``, ``state``, ``alpha``),
whose values are its own :class:`~evokernel.memory.values.ValueFold` of the lines it pulls from the owner
by byte offset. So every process folds the same lines in the same order, and every logged ``q_before`` is
the fold's value at that line.

**Idempotence.** An update is applied at most once per attempt id (the ledger's rule), so a call that is
run twice is harmless: Ray retries calls in flight when the owner dies (``max_task_retries``) and the
client retries a call whose reply was lost (``ActorUnavailableError``), both with the same request id.
``record`` returns the entry when this call (or a retry of it) applied it and the owner still remembers
that (not across an owner restart: then None, as for an attempt a resumed run applied before), None when
another call applied it first.

**Failures.** The owner restarts when its process dies (``max_restarts=-1``, on the same node) and rebuilds
its state from the files: complete lines are the truth, a torn tail (the owner killed mid-write) is cut off
and its attempt redone by the retried call. It lives as long as the process that started it (the eval's
harness) and on that process's node: a node failure that takes the owner takes the harness too.

**Finding the owner.** ``EVOKERNEL_VALUE_LEDGER=ray://<namespace>/<actor name>`` (the harness sets it for
its units when it runs on a cluster) and the cluster's address in ``EVOKERNEL_RAY_ADDRESS`` (else
``RAY_ADDRESS``; a process already connected to Ray uses its connection). Without the setting, nothing
here is used and ray is not imported: :func:`open_ledger` returns the flock ``ValueLedger``.
"""
from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Mapping

from .values import FoldReader, ValueFold, ValueLedger, ValueState, check_update, clean_values, import_id

__all__ = ["ADDRESS_ENV", "LedgerOwnerError", "NAMESPACE", "OwnerHandle", "RemoteValueLedger", "SETTING_ENV",
           "ValueLedgerOwner", "connect_owner", "open_ledger", "parse_setting", "start_owner"]

SETTING_ENV = "EVOKERNEL_VALUE_LEDGER"
ADDRESS_ENV = "EVOKERNEL_RAY_ADDRESS"
NAMESPACE = "evokernel"
SCHEME = "ray://"
CALL_TIMEOUT_S = 300.0  # one call, retries included (an owner restarting takes a few seconds)
REMEMBERED = 65536  # requests whose entries the owner keeps, to answer a retried call with its entry


class LedgerOwnerError(RuntimeError):
    """The ledger's owner cannot be found or reached, or answered inconsistently (the message says which)."""


def parse_setting(value: str) -> tuple[str, str]:
    """``ray://<namespace>/<actor name>`` -> (namespace, name)."""
    rest = value.strip()
    if not rest.startswith(SCHEME):
        raise LedgerOwnerError(f"{SETTING_ENV}={value!r}: expected {SCHEME}<namespace>/<actor name>")
    ns, sep, name = rest[len(SCHEME):].partition("/")
    if not sep or not ns or not name or "/" in name:
        raise LedgerOwnerError(f"{SETTING_ENV}={value!r}: expected {SCHEME}<namespace>/<actor name>")
    return ns, name


# --------------------------------------------------------------------------- the owner (a Ray actor)


class ValueLedgerOwner:
    """Owns the value ledgers under ``root`` (one :class:`ValueLedger` per file); run as a Ray actor by
    :func:`start_owner`. Every method takes the caller's position in the file, ``(generation, offset)``, and
    returns the lines after it: ``{"generation", "start", "data"}`` (see :meth:`ValueLedger.lines_since`)."""

    def __init__(self, root: str):
        self.root = Path(os.path.abspath(root))
        self._real_root = self.root.resolve()
        self._ledgers: dict[str, ValueLedger] = {}
        # (ledger, attempt id) -> (request id, entry) of the updates this incarnation applied
        self._applied_by: OrderedDict[tuple[str, str], tuple[str, dict[str, Any]]] = OrderedDict()

    def _ledger(self, path: str) -> ValueLedger:
        if not isinstance(path, str) or not os.path.isabs(path):
            raise ValueError(f"the ledger path must be absolute, got {path!r}")
        real = Path(path).resolve()
        if not real.is_relative_to(self._real_root) or real.suffix != ".jsonl":
            raise ValueError(f"{path} is not a value ledger (*.jsonl) under {self.root}, which this owner serves")
        key = str(real)
        if key not in self._ledgers:
            self._ledgers[key] = ValueLedger(real)
        return self._ledgers[key]

    @staticmethod
    def _since(led: ValueLedger, generation: int | None, offset: int) -> dict[str, Any]:
        gen, start, data = led.lines_since(offset, generation)
        return {"generation": gen, "start": start, "data": data}

    def _answer(self, led: ValueLedger, attempt_id: str, request: str, entry: dict[str, Any] | None,
                generation: int | None, offset: int) -> dict[str, Any]:
        key = (str(led.path), attempt_id)
        if entry is not None:
            self._applied_by[key] = (request, entry)
            if len(self._applied_by) > REMEMBERED:
                self._applied_by.popitem(last=False)
        else:
            prev = self._applied_by.get(key)
            if prev is not None and prev[0] == request:
                entry = prev[1]  # a retry of the call that applied it (its first reply was lost)
        return {"entry": entry, **self._since(led, generation, offset)}

    def where(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "root": str(self.root)}

    def pull(self, path: str, generation: int | None, offset: int) -> dict[str, Any]:
        return self._since(self._ledger(path), generation, offset)

    def record(self, path: str, generation: int | None, offset: int, request: str, attempt_id: str, stage: str,
               reward: float, items: list[str], task: str, iteration: int, alpha: float) -> dict[str, Any]:
        _check_request(request, attempt_id)
        led = self._ledger(path)
        entry = led.record(attempt_id, stage, reward, items, task=task, iteration=iteration, alpha=alpha)
        return self._answer(led, attempt_id, request, entry, generation, offset)

    def set_values(self, path: str, generation: int | None, offset: int, request: str, attempt_id: str,
                   values: dict[str, dict[str, Any]], task: str) -> dict[str, Any]:
        _check_request(request, attempt_id)
        led = self._ledger(path)
        attempt_id = import_id(attempt_id)
        entry = led.set_values(attempt_id, values, task=task)
        return self._answer(led, attempt_id, request, entry, generation, offset)


def _check_request(request: str, attempt_id: str) -> None:
    if not isinstance(request, str) or not request:
        raise ValueError(f"a request id is required, got {request!r}")
    if not isinstance(attempt_id, str) or not attempt_id:
        raise ValueError(f"an attempt id is required, got {attempt_id!r}")


class OwnerHandle:
    """The owner actor as its starter sees it: :attr:`setting` (what processes are given to find it),
    :meth:`env` (that and the cluster's address, as environment), :meth:`stop`."""

    def __init__(self, actor: Any, namespace: str, name: str):
        self.actor, self.namespace, self.name = actor, namespace, name

    @property
    def setting(self) -> str:
        return f"{SCHEME}{self.namespace}/{self.name}"

    def env(self) -> dict[str, str]:
        import ray

        return {SETTING_ENV: self.setting, ADDRESS_ENV: ray.get_runtime_context().gcs_address}

    def where(self, timeout_s: float = 60.0) -> dict[str, Any]:
        import ray

        return ray.get(self.actor.where.remote(), timeout=timeout_s)

    def stop(self) -> None:
        import ray

        try:
            ray.kill(self.actor, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone, or Ray shut down: nothing left to stop
            pass


def start_owner(root: str | Path, name: str | None = None, namespace: str = NAMESPACE, node_id: str | None = None,
                owner_class: type = ValueLedgerOwner) -> OwnerHandle:
    """Start the owner of the ledgers under ``root`` on this process's Ray connection, as a named actor: on
    ``node_id`` (default: this process's node; pinned there, since Ray's soft affinity placed it elsewhere
    now and then), holding no CPU, restarted whenever it dies (calls in flight retried), and living as long
    as this process. Waits until it answers."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    if not ray.is_initialized():
        raise LedgerOwnerError("start_owner needs a Ray connection (ray.init) first")
    name = name or f"value-ledger-{uuid.uuid4().hex[:12]}"
    node = node_id or ray.get_runtime_context().get_node_id()
    actor = ray.remote(owner_class).options(
        name=name, namespace=namespace, num_cpus=0, max_restarts=-1, max_task_retries=-1, max_concurrency=1,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id=node, soft=False)).remote(str(root))
    handle = OwnerHandle(actor, namespace, name)
    try:
        handle.where()
    except Exception as exc:
        handle.stop()
        raise LedgerOwnerError(f"the value-ledger owner {handle.setting} did not start: {_said(exc)}") from None
    return handle


# --------------------------------------------------------------------------- the client


_owners: dict[str, Any] = {}
_owners_lock = threading.Lock()


def connect_owner(setting: str) -> Any:
    """The owner actor named by ``setting`` (``ray://<namespace>/<name>``), joining the cluster at
    ``EVOKERNEL_RAY_ADDRESS`` (else ``RAY_ADDRESS``) first when this process is not connected to Ray."""
    ns, name = parse_setting(setting)
    with _owners_lock:
        if setting in _owners:
            return _owners[setting]
        import ray

        address = os.environ.get(ADDRESS_ENV) or os.environ.get("RAY_ADDRESS") or ""
        if not ray.is_initialized():
            if not address:
                raise LedgerOwnerError(f"{SETTING_ENV}={setting} names a Ray actor, but no cluster address is set "
                                       f"({ADDRESS_ENV} or RAY_ADDRESS = HOST:PORT of the cluster's head)")
            from evokernel.runtime.ray_cluster import cluster_mode

            cluster_mode()  # a member of the cluster, whatever a private Ray of this process set before
            try:
                ray.init(address=address, namespace=ns, log_to_driver=False, configure_logging=False)
            except Exception as exc:  # noqa: BLE001 - Ray raises several kinds; one sentence for the user
                raise LedgerOwnerError(f"could not join the Ray cluster at {address} to reach the value-ledger "
                                       f"owner {setting}: {_said(exc)}") from None
        try:
            actor = ray.get_actor(name, namespace=ns)
        except ValueError:
            raise LedgerOwnerError(f"no value-ledger owner {setting} on the Ray cluster"
                                   f"{' at ' + address if address else ''}: the eval that started it has ended, "
                                   f"or {SETTING_ENV} is stale") from None
        _owners[setting] = actor
        return actor


def open_ledger(path: str | Path, alpha: float = 0.1) -> ValueLedger | RemoteValueLedger:
    """The value ledger at ``path``: through its owner when ``EVOKERNEL_VALUE_LEDGER`` is set, else the file
    itself under flock."""
    setting = os.environ.get(SETTING_ENV, "").strip()
    if not setting:
        return ValueLedger(path, alpha=alpha)
    return RemoteValueLedger(path, connect_owner(setting), alpha=alpha)


class RemoteValueLedger(FoldReader):
    """A value ledger written through its owner (see the module docstring); the interface of
    :class:`ValueLedger`. Thread-safe: one call to the owner at a time per ledger."""

    def __init__(self, path: str | Path, owner: Any, alpha: float = 0.1, timeout_s: float = CALL_TIMEOUT_S):
        self.path = Path(os.path.abspath(path))
        self.alpha = alpha
        self.fold = ValueFold()
        self.generation: int | None = None
        self.torn_lines = 0  # lines of the file that are not entries (the owner rewrites them away)
        self.timeout_s = timeout_s
        self._owner = owner
        self._lock = threading.RLock()
        self.refresh()

    @property
    def state(self) -> ValueState:
        return self.fold.state

    def _call(self, method: str, *args: Any) -> dict[str, Any]:
        """Call the owner; a call whose outcome is unknown (the owner unreachable or restarting) is sent
        again with the same arguments (the same request id): at most once applied, by the owner's rule."""
        import ray
        from ray.exceptions import ActorDiedError, ActorUnavailableError, GetTimeoutError, RayTaskError

        deadline = time.monotonic() + self.timeout_s
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LedgerOwnerError(f"the value-ledger owner did not answer {method} within {self.timeout_s:.0f} s")
            try:
                return ray.get(getattr(self._owner, method).remote(str(self.path), self.generation,
                                                                   self.fold.offset, *args), timeout=left)
            except ActorUnavailableError:
                time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            except GetTimeoutError:
                continue  # the deadline check above raises
            except ActorDiedError as exc:
                raise LedgerOwnerError(f"the value-ledger owner is gone ({_said(exc)}): the eval that started "
                                       "it has ended") from None
            except RayTaskError as exc:  # the owner refused the call (bad input) or could not do it (its disk)
                cause = exc.cause
                if isinstance(cause, ValueError):
                    raise ValueError(str(cause)) from None
                raise LedgerOwnerError(f"the value-ledger owner failed {method} on {self.path}: {_said(cause)}") from None

    def _absorb(self, reply: Mapping[str, Any]) -> int:
        """Fold the lines of a reply (they start at our offset, or at 0 when the file was rewritten)."""
        start, data = reply["start"], reply["data"]
        if start == 0 and (self.fold.offset or reply["generation"] != self.generation):
            self.fold.reset()
        elif start != self.fold.offset:
            raise LedgerOwnerError(f"the owner sent lines from byte {start} of {self.path}, this process has "
                                   f"{self.fold.offset}")
        self.generation = reply["generation"]
        folded, bad, tail = self.fold.feed(data)
        if tail:
            raise LedgerOwnerError(f"the owner sent an incomplete line of {self.path}")
        self.torn_lines += bad
        return folded

    # --- the ValueLedger interface --------------------------------------------------------------

    def refresh(self) -> int:
        """Fold the entries appended (by any process) since this client last pulled; returns how many."""
        with self._lock:
            return self._absorb(self._call("pull"))

    def applied(self, attempt_id: str) -> bool:
        """Whether this attempt is in the ledger (as of the last pull; ``record`` asks the owner)."""
        return self.fold.applied(attempt_id)

    def record(self, attempt_id: str, stage: str, reward: float, items: Iterable[str], task: str = "",
               iteration: int = 0, alpha: float | None = None) -> dict[str, Any] | None:
        """As :meth:`ValueLedger.record`: the entry, or None when the attempt was already applied."""
        reward, alpha = check_update(stage, reward, self.alpha if alpha is None else alpha)
        if isinstance(items, (str, bytes)):
            raise ValueError(f"items must be a list of item ids, got the string {items!r}")
        ids = list(dict.fromkeys(items))
        if not all(isinstance(i, str) and i for i in ids):
            raise ValueError(f"item ids must be non-empty strings, got {ids!r}")
        if not isinstance(attempt_id, str) or not attempt_id:
            raise ValueError(f"an attempt id is required, got {attempt_id!r}")
        with self._lock:
            if self.fold.applied(attempt_id):
                return None
            reply = self._call("record", uuid.uuid4().hex, attempt_id, stage, reward, ids, str(task),
                               int(iteration), alpha)
            self._absorb(reply)
            return reply["entry"]

    def set_values(self, attempt_id: str, values: Mapping[str, Mapping[str, Any]], task: str = "") -> dict[str, Any] | None:
        """As :meth:`ValueLedger.set_values`."""
        attempt_id = import_id(attempt_id)
        clean = clean_values(values)
        with self._lock:
            if self.fold.applied(attempt_id):
                return None
            reply = self._call("set_values", uuid.uuid4().hex, attempt_id, clean, str(task))
            self._absorb(reply)
            return reply["entry"]



def _said(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"
