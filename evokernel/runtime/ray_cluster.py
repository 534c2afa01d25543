"""Joining or starting Ray, for every part of EvoKernel that runs work on it (the eval's units, the verifier pool).

``address``: ``auto`` joins the cluster named by ``RAY_ADDRESS`` when it is set, else starts a private local Ray;
``local`` always starts a private one; anything else is a cluster address (``HOST:PORT`` of ``ray start --head``).
(Ray's own "auto" would also join any cluster it finds running on this machine, so two evals, or a test next to a
`ray start`, would share one by accident.) A private Ray uses 127.0.0.1 as its node address (:func:`loopback_only`),
starts no dashboard and keeps its object store at Ray's minimum. Start-up on a 2-core machine: ~4 s
(docs/scale-out.md).
"""
from __future__ import annotations

import os
import socket
import sys
from typing import Any

__all__ = ["EngineError", "OBJECT_STORE_BYTES", "check_reachable", "cluster_mode", "connect", "loopback_only", "patient_gcs", "said"]

OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Ray's floor is 75 MiB


class EngineError(RuntimeError):
    """Ray could not be started or reached (the message says which and how to fix it)."""


def said(exc: BaseException) -> str:
    """``Type: first line of the message`` (Ray's messages run to pages)."""
    text = str(exc)
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast on a cluster address nothing listens at (ray.init would retry for minutes)."""
    host, sep, port = address.removeprefix("ray://").rpartition(":")
    if not sep or not port.isdigit():
        raise EngineError(f"--ray {address!r}: give auto, local or a cluster address HOST:PORT "
                          "(what `ray start --head` printed)")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            pass
    except OSError as exc:
        raise EngineError(f"no Ray cluster answers at {address} ({exc.strerror or exc}); start one with "
                          f"`ray start --head --port {port}` on {host}, or run without --ray for a local Ray") from None


def loopback_only() -> None:
    """Make Ray on this machine use 127.0.0.1 as its node address. Ray replaces a loopback ``--node-ip-address``
    by the host's routable IP (``services.resolve_ip_for_localhost``), so a "local" Ray talked to itself over
    the machine's network address; Ray keeps to loopback only where clusters are off
    (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``, read when ray is imported: set for the processes Ray starts, and
    in this process's constant if ray is imported already). For a private Ray and for test clusters on one
    machine; never on a real cluster, whose nodes must reach each other."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    if "ray" in sys.modules:
        from ray._private import ray_constants  # lazy: ray (~1 s), only when Ray is joined or started

        ray_constants.ENABLE_RAY_CLUSTER = False


def cluster_mode() -> None:
    """Undo :func:`loopback_only` in this process (Ray's default: find the node address as a cluster member),
    for a process that ran a private Ray and now joins a cluster: with loopback only, Ray looks for its node at
    127.0.0.1 and finds no raylet of the cluster there ("Failed to connect to Ray cluster")."""
    os.environ.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
    if "ray" in sys.modules:
        from ray._private import ray_constants  # lazy: ray (~1 s), only when Ray is joined or started

        ray_constants.ENABLE_RAY_CLUSTER = not ray_constants.IS_WINDOWS_OR_OSX


def patient_gcs() -> None:
    """Give Ray's GCS 120 s to start (a new head publishing its port) and to answer (a client connecting), not
    30 s and 20 s: on a loaded 2-core machine (an eval beside a local LLM, a test suite) those were measured to
    run out ("Failed to start GCS"). For the heads this process starts and the processes it starts."""
    os.environ.setdefault("RAY_gcs_server_port_wait_time_s", "120")


def connect(address: str = "auto", num_cpus: int | None = None, namespace: str | None = None) -> bool:
    """Join the cluster at ``address`` or start a private Ray (see the module docstring); True when this
    process started Ray (and should shut it down). A process already connected stays as it is."""
    target = (os.environ.get("RAY_ADDRESS") or "local") if address == "auto" else address
    if target == "local":
        loopback_only()
        # token authentication, what Ray 2.60 picks for a new local cluster anyway, asked for explicitly: Ray
        # then creates the token if needed and does not print a notice about the default on every start
        os.environ.setdefault("RAY_AUTH_MODE", "token")
        patient_gcs()
    import ray  # lazy: ray (~1 s), only when Ray is joined or started

    if ray.is_initialized():
        return False
    kw: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
    if namespace:
        kw["namespace"] = namespace
    if target == "local":
        # nothing large goes through Ray's object store (results are a few numbers, verdicts a few KiB):
        # its minimum, not 30% of the machine's memory
        kw.update(address="local", include_dashboard=False, _node_ip_address="127.0.0.1",
                  num_cpus=num_cpus or os.cpu_count() or 1, object_store_memory=OBJECT_STORE_BYTES)
    else:
        check_reachable(target)
        if target.removeprefix("ray://").rpartition(":")[0] in ("127.0.0.1", "localhost"):
            loopback_only()  # a private Ray of this machine (an eval's, joined by its units): keep to loopback
        else:
            cluster_mode()  # a cluster member, whatever a private Ray of this process set before
        kw["address"] = target
    try:
        ray.init(**kw)
    except Exception as exc:  # noqa: BLE001 - Ray raises several kinds; the user needs one sentence
        where = "start a local Ray" if target == "local" else f"join the Ray cluster at {target}"
        raise EngineError(f"could not {where}: {said(exc)}") from None
    return target == "local"


def gcs_address() -> str:
    """The address other processes join this process's Ray at (``HOST:PORT`` of its head)."""
    import ray  # lazy: ray (~1 s), only when Ray is joined or started

    return ray.get_runtime_context().gcs_address
