"""Ray as the execution engine of `evokernel eval`: each unit's `evokernel run` process runs inside a Ray actor.

The harness (:mod:`evokernel.evals.harness`) plans units and keeps their progress; this module only places
and runs them. A unit is one :class:`_UnitProcess` actor that starts the unit's command on its node, waits
for it and reports the exit code; the actor is threaded, so an interrupt (Ctrl-C of the eval: one SIGINT,
then SIGKILL after the grace period) reaches the process while ``run`` waits. Ray places the actor where its
resources are free (``unit_resources``: one CPU by default, ``{"NPU": 1}`` more for the ascend backend), so
on a cluster the units spread over the nodes, and a node that dies takes its actors with it: the harness
sees ``RayActorError`` for those units and runs them again elsewhere with ``--resume`` (their checkpoints and
attempt logs are in the eval directory, which every node must see at the same path).

``--ray``: see :mod:`evokernel.runtime.ray_cluster` (``auto``, ``local`` or a cluster address).
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
from typing import Any

from evokernel.runtime.ray_cluster import EngineError, check_reachable, connect, loopback_only, said
from evokernel.verifier.backends.registry import spec

__all__ = ["ENV_PREFIXES", "EngineError", "RayEngine", "UnitLost", "check_reachable", "die_with_parent", "forwarded_env", "loopback_only", "unit_resources"]

# environment the units need from the harness's process (model endpoints, keys, local-model knobs)
ENV_PREFIXES = ("EVOKERNEL_", "HF_", "OPENAI_", "DEEPSEEK_", "OLLAMA_", "VLLM_", "TRANSFORMERS_", "ASCEND_")


class UnitLost(RuntimeError):
    """The unit's actor died (its node went away, or it was killed): the machine failed, not the unit."""


def forwarded_env() -> dict[str, str]:
    """The harness's settings a unit needs wherever it runs (offline by default, unbuffered logs)."""
    env = {"HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    env.update({k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES)})
    return env


def unit_resources(backend: str, concurrency: int = 1) -> dict[str, float]:
    """What one unit holds while it runs: a CPU (its process; cpu timing is single-threaded), and an NPU
    for the ascend backend (a custom resource the hosts declare: ``ray start --resources '{"NPU": 8}'``).
    A unit with ``concurrency`` > 1 judges nothing itself: its K verifier actors hold the devices
    (verifier/pool.py), so the unit's process holds none (it generates, retrieves and waits)."""
    if concurrency > 1:
        return {"CPU": 0.0}
    return dict(spec(backend).resources)  # the backend's registry row


def die_with_parent() -> None:
    """Child side of Popen: SIGTERM when the actor's process dies; SIGINT handled even if inherited ignored or
    blocked (Ray's worker threads block signals, and a blocked mask survives exec: the unit never saw the
    harness's interrupt until this unblocked it)."""
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    with contextlib.suppress(OSError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)


class _UnitProcess:
    """A unit's process on whichever node Ray placed this actor (see the module docstring)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen | None = None

    def where(self) -> dict[str, Any]:
        import ray

        return {"node": ray.get_runtime_context().get_node_id(), "host": socket.gethostname(),
                "pid": self.proc.pid if self.proc else None}

    def run(self, cmd: list[str], cwd: str, log_path: str, env: dict[str, str]) -> dict[str, Any]:
        """Start ``cmd`` (its first element, the Python, replaced by this node's) and wait for it."""
        argv = [sys.executable, *cmd[1:]]
        full_env = dict(os.environ, **env)
        started = time.monotonic()
        with open(log_path, "ab") as log:
            where = self.where()
            log.write(f"# ray node {where['node']} (host {where['host']})\n".encode())
            log.flush()
            self.proc = subprocess.Popen(argv, cwd=cwd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=full_env, start_new_session=True, preexec_fn=die_with_parent)
            rc = self.proc.wait()
        return {"rc": rc, "seconds": time.monotonic() - started, **self.where()}

    def interrupt(self) -> bool:
        if self.proc is None or self.proc.poll() is not None:
            return False
        with contextlib.suppress(ProcessLookupError):
            self.proc.send_signal(signal.SIGINT)
        return True

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)


class RayEngine:
    """Connects to (or starts) Ray and runs units as :class:`_UnitProcess` actors."""

    def __init__(self, address: str = "auto", num_cpus: int | None = None):
        self.started_here = connect(address, num_cpus)  # before importing ray: a private Ray keeps to loopback
        import ray

        self.ray = ray
        self.address = address
        self.actor_class = ray.remote(max_concurrency=4, max_restarts=0)(_UnitProcess)

    def resources(self) -> dict[str, float]:
        return dict(self.ray.cluster_resources())

    def unit_address(self) -> str:
        """Where a unit's process joins this Ray (its verifier actors): the head's ``HOST:PORT``."""
        return self.ray.get_runtime_context().gcs_address

    def nodes(self) -> list[dict[str, Any]]:
        return [n for n in self.ray.nodes() if n.get("Alive")]

    def submit(self, cmd: list[str], cwd: str, log_path: str, resources: dict[str, float]) -> tuple[Any, Any]:
        """(actor, ObjectRef of its run result); the run starts once Ray has the resources."""
        res = dict(resources)
        cpus = res.pop("CPU", 1.0)
        actor = self.actor_class.options(num_cpus=cpus, resources=res or None,
                                         scheduling_strategy="SPREAD").remote()
        return actor, actor.run.remote(cmd, cwd, log_path, forwarded_env())

    def finished(self, refs: list[Any]) -> list[Any]:
        if not refs:
            return []
        done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        return done

    def result(self, ref: Any) -> dict[str, Any]:
        """The run's result; :class:`UnitLost` if its actor or node died."""
        from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError, WorkerCrashedError

        try:
            return self.ray.get(ref)
        except (RayActorError, ActorDiedError, ActorUnavailableError, WorkerCrashedError) as exc:
            raise UnitLost(said(exc)) from None

    def interrupt(self, actor: Any) -> None:
        with contextlib.suppress(Exception):
            actor.interrupt.remote()

    def kill(self, actor: Any) -> None:
        with contextlib.suppress(Exception):
            self.ray.get(actor.kill.remote(), timeout=10)
        with contextlib.suppress(Exception):
            self.ray.kill(actor)

    def shutdown(self) -> None:
        if self.started_here and self.ray.is_initialized():
            self.ray.shutdown()
