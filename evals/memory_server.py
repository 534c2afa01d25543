"""The Chroma server (`chroma run`) an arm's shards share as one memory, on a free port of the node's address.

Started by the harness for streams split into shards (``memory_server = true``); each shard's `evokernel run`
reaches it with ``--memory-url``. It lives as long as the arm has shards to run, and dies with the harness.
It listens on :func:`server_host`: 127.0.0.1 for a private local Ray, the address the other nodes reach the
harness's node at when the eval runs on a cluster (shards placed on other nodes connect to it there).
"""
from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from evokernel.evals.engine import die_with_parent

__all__ = ["ChromaServer", "server_host"]

LOOPBACK = "127.0.0.1"
_DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # the server is on this host: no proxy


def server_host(engine: Any) -> str:
    """Where the arm's memory server listens: 127.0.0.1 when the engine started a private Ray (or has no Ray:
    tests' fakes), else this process's Ray node address (what ``ray.nodes()`` lists for it: the address the
    other nodes reach this node at)."""
    if getattr(engine, "started_here", True) or getattr(engine, "ray", None) is None:
        return LOOPBACK
    ray = engine.ray
    me = ray.get_runtime_context().get_node_id()
    for node in ray.nodes():
        if node.get("NodeID") == me and node.get("NodeManagerAddress"):
            return node["NodeManagerAddress"]
    raise RuntimeError(f"this process's Ray node {me} is not in the cluster's node list")


class ChromaServer:
    """A `chroma run` serving one arm's memory to its shards, on a free port of ``host``."""

    def __init__(self, path: Path, log: Path, host: str = LOOPBACK):
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"the memory server needs an IP address to listen on, got {host!r}") from None
        exe = Path(sys.executable).with_name("chroma")
        exe_s = str(exe) if exe.exists() else "chroma"
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        with socket.socket(family) as s:
            s.bind((host, 0))
            self.port = s.getsockname()[1]
        self.host = host
        self.url = f"http://{f'[{host}]' if ':' in host else host}:{self.port}"
        path.mkdir(parents=True, exist_ok=True)
        self._log = log.open("ab")
        env = dict(os.environ, ANONYMIZED_TELEMETRY="False")
        self.proc = subprocess.Popen([exe_s, "run", "--path", str(path / "chroma"), "--host", host,
                                      "--port", str(self.port)], stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 90
        while True:
            if self.proc.poll() is not None:
                self._log.close()
                raise RuntimeError(f"the Chroma server exited with {self.proc.returncode} (log: {log})")
            try:
                with _DIRECT.open(f"{self.url}/api/v2/heartbeat", timeout=2):
                    return
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"the Chroma server did not answer within 90 s (log: {log})")
                time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if not self._log.closed:
            self._log.close()
