"""A real multi-node Ray cluster on one machine, on loopback addresses: for tests and benchmarks of the engine.

Each node is a ``ray start --block`` process group with its own loopback address (127.0.0.2 for the head,
127.0.0.3, 127.0.0.4, ... for the others: Ray replaces 127.0.0.1 by the machine's routable address, not the
rest of 127/8), its CPUs and custom resources. Token authentication is on, with one token for every node
and client, as a real cluster needs. ``env`` is the environment a client (``evokernel eval --ray ADDRESS``)
must run with. Killing a node (:meth:`LocalCluster.kill`) is what a host failure looks like to Ray.
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["LocalCluster"]

RAY = str(Path(sys.executable).with_name("ray"))


class LocalCluster:
    """``with LocalCluster([{"cpus": 1, "resources": {"head_slot": 1}}, {"cpus": 1, "resources": {"NPU": 1}}]) as c:``"""

    def __init__(self, nodes: list[dict[str, Any]], start_timeout_s: float = 180.0):
        if not nodes:
            raise ValueError("a cluster needs at least its head node")
        self.specs = nodes
        self.timeout = start_timeout_s
        from evokernel.runtime.ray_cluster import cluster_mode, patient_gcs

        patient_gcs()  # for the nodes (self.env below copies it) and for this process's own client
        cluster_mode()  # this process may have run a private (loopback-only) Ray before: its clients join as members
        self.env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16))
        for var in ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"):
            self.env.pop(var, None)
        self.procs: list[subprocess.Popen] = []
        self.tmp = ""
        self.address = ""

    @staticmethod
    def ip(i: int) -> str:
        return f"127.0.0.{i + 2}"

    def _start(self, i: int) -> None:
        spec = self.specs[i]
        args = [RAY, "start", "--block", "--node-ip-address", self.ip(i), "--disable-usage-stats",
                "--num-cpus", str(spec.get("cpus", 1)), "--resources", json.dumps(spec.get("resources", {}))]
        if i == 0:
            with socket.socket() as s:
                s.bind((self.ip(0), 0))
                port = s.getsockname()[1]
            self.address = f"{self.ip(0)}:{port}"
            args += ["--head", "--port", str(port), "--include-dashboard", "false", "--temp-dir", self.tmp]
        else:
            args += ["--address", self.address]
        self.procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=self.env,
                                           start_new_session=True))

    def alive_nodes(self) -> int:
        """Nodes `ray status` lists as active (the state API would need the dashboard, which stays off)."""
        r = subprocess.run([RAY, "status", "--address", self.address], env=self.env, capture_output=True, text=True)
        if r.returncode != 0 or "Active:" not in r.stdout:
            return 0
        active = r.stdout.split("Active:", 1)[1].split("Pending:", 1)[0]
        return len(re.findall(r"^\s*\d+\s+node_", active, re.M))

    def __enter__(self) -> LocalCluster:
        self.tmp = tempfile.mkdtemp(prefix="rk", dir="/tmp")  # short: Ray's socket paths have a length limit
        try:
            deadline = time.monotonic() + self.timeout
            self._start(0)
            while not self.alive_nodes():
                if self.procs[0].poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the head node did not start")
                time.sleep(0.5)
            for i in range(1, len(self.specs)):
                self._start(i)
            while self.alive_nodes() < len(self.specs):
                if any(p.poll() is not None for p in self.procs) or time.monotonic() > deadline:
                    raise RuntimeError("not every node joined the cluster")
                time.sleep(0.5)
        except BaseException:
            self.close()
            raise
        return self

    def kill(self, i: int) -> None:
        """SIGKILL node ``i``'s whole process group (raylet, workers and the actors on it)."""
        proc = self.procs[i]
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()

    def close(self) -> None:
        for i in reversed(range(len(self.procs))):
            self.kill(i)
        if self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def __exit__(self, *exc: object) -> None:
        self.close()
