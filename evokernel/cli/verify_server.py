"""A warm verifier the CLI reuses: ``evokernel verify --serve`` and the client side of ``evokernel verify``.

A cold ``evokernel verify`` spends most of its time starting up: the CLI process imports torch, and two
sandboxes each import torch again before the verdict itself (0.5-1 s cached) begins. A server keeps one
`Verifier` warm (its sandboxes started, the reference workers of recent tasks alive) behind a Unix socket
(mode 0600, one per user, backend, thread count, sandbox mode and build cache); ``evokernel verify`` finds
it and sends the task path, overrides, candidate source and per-verdict settings, and prints the verdict it
gets back exactly as the in-process path would. The client never imports torch.

The server judges one request at a time (a Verifier is not thread-safe), applies per-request settings
that need no new sandboxes (tolerance, trials, seed, timing, compile baseline, timeout), answers a request
for other sandbox-level settings with "incompatible" (the client then verifies in-process), and survives
anything a request or a candidate does. Messages use the verifier's bounded codec.
"""
from __future__ import annotations

import errno
import hashlib
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

from evokernel.cli import verify_protocol
from evokernel.runtime.paths import default_cache_dir
from evokernel.tasks.load import load_task
from evokernel.tasks.task import TaskError
from evokernel.verifier import message_codec as codec

MAX_REQUEST = 64 * 1024 * 1024  # a task and a candidate source
PER_REQUEST = ("strict", "trials", "timing", "compile_baseline", "seed", "timeout")


def sandbox_setting() -> str:
    return os.environ.get("EVOKERNEL_SANDBOX") or "auto"


def socket_path(backend: str, threads: int) -> Path:
    """Where the server for these settings listens: $XDG_RUNTIME_DIR, else the build cache."""
    cache = default_cache_dir()
    key = hashlib.sha256(f"{os.getuid()}|{backend}|{threads}|{sandbox_setting()}|{cache.resolve()}".encode())
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or cache)
    return base / f"evokernel-verify-{key.hexdigest()[:16]}.sock"


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket (SO_PEERCRED)."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


# --- client -----------------------------------------------------------------------------------------
class NoServer(Exception):
    """No usable server: verify in-process."""


def request(path: Path, msg: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
    """One request to the server at ``path`` (NoServer when none answers; a stale socket is removed)."""
    if not path.exists():
        raise NoServer("no server")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        try:
            s.connect(str(path))
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                try:
                    path.unlink()  # a server that died without cleaning up
                except OSError:
                    pass
            raise NoServer(f"the server at {path} does not answer ({exc.strerror})") from None
        codec.send(s.fileno(), msg)
        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            return codec.recv(s.fileno(), deadline, max_message=MAX_REQUEST)
        except codec.ProtocolError as exc:
            raise NoServer(f"the server at {path} failed: {exc}") from None
    finally:
        s.close()


# --- server -----------------------------------------------------------------------------------------
class Server:
    def __init__(self, backend: str, threads: int, path: Path, idle_timeout: float | None):
        self.backend, self.threads, self.path, self.idle_timeout = backend, threads, path, idle_timeout
        self.verifier: Any = None
        self.served = 0
        self.stopping = False
        self.info: dict[str, Any] = {}  # added to ping and verify replies (the daemon's code version)

    def config(self, req: dict[str, Any]) -> Any:
        # lazy: the verifier imports torch: only for an in-process verdict
        from evokernel.verifier.trusted.correctness import DEFAULT_TOL, STRICT_TOL

        cfg = self.verifier.config
        cfg.tol = STRICT_TOL if req["strict"] else DEFAULT_TOL
        cfg.trials = req["trials"]
        cfg.timing = req["timing"]
        cfg.compile_baseline = req["compile_baseline"]
        cfg.seed = req["seed"]
        cfg.run_timeout_s = req["timeout"]
        return cfg

    def handle(self, raw: Any) -> dict[str, Any]:
        try:
            req = verify_protocol.parse(raw)
        except verify_protocol.RequestError as exc:
            return {"ok": False, "error": f"malformed request: {exc}", "exit": 2}
        op = req["op"]
        if op == "ping":
            return {"ok": True, "pid": os.getpid(), "served": self.served, **self.info}
        if op == "stop":
            self.stopping = True
            return {"ok": True}
        if req["backend"] != self.backend or req["threads"] != self.threads:
            return {"ok": False, "incompatible": f"this server runs backend {self.backend} with {self.threads} "
                    "thread(s)"}
        if req["version"] is not None and self.info.get("version") not in (None, req["version"]):
            return {"ok": False, "incompatible": "this server runs another version of the verifier's code"}
        # lazy: the verifier imports torch: only for an in-process verdict
        from evokernel.verifier.trusted.launcher import SandboxError

        try:
            task = load_task(req["task_path"], req["overrides"])
            self.config(req)
            verdict = self.verifier.verify(task, req["candidate"])
        except (TaskError, SandboxError) as exc:
            return {"ok": False, "error": str(exc), "exit": 2}
        self.served += 1
        return {"ok": True, "verdict": verdict.to_json(), "sandbox": self.verifier.sandbox,
                "server": {"pid": os.getpid(), "served": self.served, **self.info}}

    def serve_one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(30)
            if peer_uid(conn) != os.getuid():
                return  # the socket is 0600 in a 0700 directory: only another uid (root) gets here
            try:
                req = codec.recv(conn.fileno(), time.monotonic() + 30, max_message=MAX_REQUEST)
            except codec.ProtocolError as exc:
                reply: dict[str, Any] = {"ok": False, "error": f"malformed request: {exc}", "exit": 2}
            else:
                try:
                    reply = self.handle(req)
                except Exception as exc:  # noqa: BLE001 - one failing request never ends the server
                    reply = {"ok": False, "error": f"the server failed on this request: {type(exc).__name__}: {exc}"}
            try:
                codec.send(conn.fileno(), reply)
            except OSError:
                pass  # the client went away

    def run(self, ready: Any = None) -> None:
        # lazy: the verifier imports torch: only for an in-process verdict
        from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            request(self.path, {"op": "ping"}, timeout=5)
            raise SystemExit(f"a verify server already listens on {self.path}")
        except NoServer:
            pass
        self.verifier = Verifier(self.backend, VerifyConfig(threads=self.threads)).start()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        sock.listen(8)
        sock.settimeout(self.idle_timeout)

        def stop(*_: Any) -> None:
            self.stopping = True
            sock.close()

        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if ready is not None:
            ready(self)
        try:
            while not self.stopping:
                try:
                    conn, _ = sock.accept()
                except socket.timeout:
                    break  # idle
                except OSError:
                    break  # closed by a signal
                self.serve_one(conn)
        finally:
            sock.close()
            try:
                self.path.unlink()
            except OSError:
                pass
            self.verifier.close()


def serve(backend: str, threads: int, path: Path | None = None, idle_timeout: float | None = None) -> None:
    """Run a server in the foreground until SIGTERM/Ctrl-C, ``evokernel verify --stop-server`` or idleness."""
    path = path or socket_path(backend, threads)

    def ready(server: Server) -> None:
        print(f"evokernel verify server: backend {backend}, {threads} thread(s), sandbox {server.verifier.sandbox}, "
              f"listening on {path}" + (f" (stops after {idle_timeout:.0f} s idle)" if idle_timeout else ""),
              file=sys.stderr, flush=True)

    Server(backend, threads, path, idle_timeout).run(ready)
