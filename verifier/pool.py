"""Verification on a pool of warm verifier actors, one per device, placed by Ray (trusted side).

Used when several tasks are in flight at once (``evokernel run --concurrency K``): K candidates from different
tasks are judged in parallel, each by a :class:`VerifierActor` that Ray placed on a node with a free device:

* **cpu** (and **ascend-sim**, whose emulator runs on the host): one actor per CPU. The actor holds Ray's
  ``CPU: 1`` and, because Ray counts CPUs but does not pin them, claims one core of its host (a lock file per
  core under a node-local directory, held while the actor lives) and pins itself and its sandboxes there.
  Two actors on one host therefore never time on the same core. Timed figures are still taken on a shared
  machine (memory bandwidth and caches are shared): on the cpu backend a latency measured with K > 1 is
  noisier than with one verifier; docs/scale-out.md has the measured spread.
* **ascend**: one actor per NPU (Ray's ``NPU`` resource, detected by Ray on Ascend hosts or declared with
  ``ray start --resources '{"NPU": 8}'``); Ray sets ``ASCEND_RT_VISIBLE_DEVICES`` for the actor, so the
  backend's device claim sees exactly the NPU Ray gave it.

An actor is warm: it starts its Verifier (both sandboxes, the reference workers of recent tasks) once and
serves verdicts until the pool closes. A member that dies (its process killed, its node lost, OOM) or whose
sandbox cannot start is replaced by a new actor wherever Ray finds the device, and the candidate is judged
again on it, once. When that fails too, the verdict's gate is ``machine``: the machine failed, the candidate
was not judged. The update node then applies no reward and stores no memory item for that attempt.

A pool is owned by one process (the run's); candidates reach it from that process's threads.
"""
from __future__ import annotations

import contextlib
import fcntl
import os
import queue
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from evokernel.verifier.backends.registry import spec
from evokernel.verifier.verdict import Verdict

__all__ = ["MACHINE", "VerifierActor", "VerifierPool", "claim_cpus", "device_resources", "machine_verdict"]

MACHINE = "machine"  # the failed gate of a verdict the machine could not give
START_TIMEOUT_S = 180.0  # an actor must be placed and warm within this (sandboxes start in ~3 s)
CALL_TIMEOUT_S = 1800.0  # one verdict, native builds included (build timeout 600 s); beyond: the member hangs


def device_resources(backend: str) -> dict[str, float]:
    """What one verifier actor holds (the backend's registry row): a CPU core, and an NPU for the ascend backend."""
    return dict(spec(backend).resources)


SLOTS_ENV = "EVOKERNEL_CPU_SLOTS"  # a directory of core locks other than the host's (tests, separate tenants)
CLAIM_WAIT_S = 30.0  # a member of a pool that just closed may hold its core a moment longer (Ray kills lazily)


def _slot_dir() -> Path:
    """Node-local (never the shared cache): the core locks of this host's verifier actors."""
    explicit = os.environ.get(SLOTS_ENV)
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    d = Path(explicit) if explicit else Path(base) / f"evokernel-cpu-slots-{os.getuid()}"
    d.mkdir(mode=0o700, parents=True, exist_ok=True)
    return d


def claim_cpus(n: int, directory: Path | None = None) -> tuple[list[int], list[Any]]:
    """Claim ``n`` cores of this host that no other verifier actor holds (highest first, like the timed
    workers' pinning): (cores, the open lock files to keep). ([], []) when fewer than ``n`` are free."""
    d = directory or _slot_dir()
    try:
        cpus = sorted(os.sched_getaffinity(0), reverse=True)
    except (AttributeError, OSError):
        return [], []
    got: list[int] = []
    files: list[Any] = []
    for cpu in cpus:
        f = open(d / f"cpu{cpu}.lock", "a")
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            f.close()
            continue
        got.append(cpu)
        files.append(f)
        if len(got) == n:
            return sorted(got), files
    for f in files:
        f.close()
    return [], []


class VerifierActor:
    """One device's warm verifier (a Ray actor; see the module docstring)."""

    def __init__(self, backend: str, strict: bool = False, compile_baseline: bool = False):
        self.backend = backend
        self.cpus: list[int] = []
        self._locks: list[Any] = []
        if spec(backend).device is None:  # no device of its own: the actor's core is its device
            deadline = time.monotonic() + CLAIM_WAIT_S
            self.cpus, self._locks = claim_cpus(1)
            while not self.cpus and time.monotonic() < deadline:
                time.sleep(0.5)
                self.cpus, self._locks = claim_cpus(1)
            if self.cpus:
                # this thread's affinity is inherited by the service thread and the sandboxes it starts
                os.sched_setaffinity(0, self.cpus)
        from evokernel.graph.resources import VerifierService

        self.service = VerifierService(backend, strict, compile_baseline=compile_baseline)

    def device(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(), "pid": os.getpid(),
                "cpus": self.cpus, "npus": os.environ.get(env) if (env := spec(self.backend).device_env) else None}

    def verify(self, task: Any, source: str) -> Verdict:
        return self.service.verify(task, source)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.service.close()
        for f in self._locks:
            f.close()
        self._locks = []


def machine_verdict(task: Any, backend: str, failures: list[str]) -> Verdict:
    return Verdict(False, MACHINE, "the machine failed while judging this candidate (" + "; then ".join(failures)
                   + "): nothing is known about the candidate itself", task=getattr(task, "name", ""), backend=backend)


class VerifierPool:
    """``size`` warm verifier actors on the Ray cluster at ``address``; ``verify`` may be called from any thread
    and blocks while every member is busy."""

    def __init__(self, backend: str, size: int, strict: bool = False, compile_baseline: bool = False,
                 address: str = "auto", start_timeout_s: float = START_TIMEOUT_S,
                 call_timeout_s: float = CALL_TIMEOUT_S, actor_class: type = VerifierActor):
        if size < 1:
            raise ValueError(f"a verifier pool needs at least one member, got {size}")
        from evokernel.runtime.ray_cluster import connect

        self.backend = backend
        self.size = size
        self.started_here = connect(address)
        import ray

        self.ray = ray
        self._args = (backend, strict, compile_baseline)
        # Ray would restart a dead actor in place (max_restarts), but its lost call would still fail; the pool
        # replaces members itself so the candidate is judged again on whichever node has the device
        self._cls = ray.remote(max_restarts=0, max_concurrency=1)(actor_class)
        self._start_timeout = start_timeout_s
        self._call_timeout = call_timeout_s
        self._free: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.members: list[Any] = []
        self.replaced = 0
        self.devices: list[dict[str, Any]] = []
        try:
            members = [self._spawn() for _ in range(size)]
            self.devices = [self._ready(m) for m in members]
        except BaseException:
            self.close()
            raise
        for m in members:
            self._free.put(m)

    # --- members ------------------------------------------------------------------------------
    def _spawn(self) -> Any:
        res = device_resources(self.backend)
        cpus = res.pop("CPU")
        actor = self._cls.options(num_cpus=cpus, resources=res or None, scheduling_strategy="SPREAD").remote(*self._args)
        with self._lock:
            self.members.append(actor)
        return actor

    def _ready(self, actor: Any) -> dict[str, Any]:
        """Wait until the actor is placed and its verifier started; the device it got."""
        from ray.exceptions import GetTimeoutError

        from evokernel.runtime.ray_cluster import EngineError, said

        try:
            return self.ray.get(actor.device.remote(), timeout=self._start_timeout)
        except GetTimeoutError:
            self._kill(actor)
            need = device_resources(self.backend)
            raise EngineError(f"no verifier actor could start within {self._start_timeout:.0f} s: the cluster has no "
                              f"free {need} (it has {self.ray.available_resources()}); lower --concurrency or add "
                              "nodes") from None
        except Exception as exc:  # noqa: BLE001 - the actor's constructor failed (no sandbox, no CANN, no NPU)
            self._kill(actor)
            raise EngineError(f"a verifier actor could not start: {said(exc)}") from None

    def _kill(self, actor: Any) -> None:
        with self._lock:
            if actor in self.members:
                self.members.remove(actor)
        with contextlib.suppress(Exception):
            self.ray.kill(actor)

    def _replace(self, actor: Any) -> Any:
        self._kill(actor)
        new = self._spawn()
        self.replaced += 1
        self.devices.append(self._ready(new))
        return new

    # --- verdicts -----------------------------------------------------------------------------
    def verify(self, task: Any, source: str) -> Verdict:
        from ray.exceptions import (
            ActorDiedError,
            ActorUnavailableError,
            GetTimeoutError,
            RayActorError,
            WorkerCrashedError,
        )

        from evokernel.runtime.ray_cluster import EngineError, said
        from evokernel.verifier.trusted.launcher import SandboxError

        lost = (RayActorError, ActorDiedError, ActorUnavailableError, WorkerCrashedError, GetTimeoutError, SandboxError)
        while True:
            try:
                actor = self._free.get(timeout=2.0)
                break
            except queue.Empty:
                if not self.members:  # every device was lost and none could be had again
                    return machine_verdict(task, self.backend, ["no verifier actor is left in the pool"])
        failures: list[str] = []
        try:
            for _ in range(2):  # the candidate is judged again once on a fresh actor
                try:
                    return self.ray.get(actor.verify.remote(task, source), timeout=self._call_timeout)
                except lost as exc:
                    failures.append(said(exc))
                    try:
                        actor = self._replace(actor)
                    except EngineError as exc2:
                        failures.append(str(exc2))
                        actor = None
                        break
            return machine_verdict(task, self.backend, failures)
        finally:
            if actor is not None:
                self._free.put(actor)
            else:  # no device could be had again: try once more for the next candidate
                try:
                    self._free.put(self._replace(None))
                except EngineError:
                    pass  # the pool shrinks; verify blocks on the members left

    def close(self) -> None:
        with self._lock:
            members, self.members = list(self.members), []
        for m in members:
            with contextlib.suppress(Exception):
                self.ray.get(m.close.remote(), timeout=30)
            with contextlib.suppress(Exception):
                self.ray.kill(m)
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
