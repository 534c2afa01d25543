"""The warm verifier as a per-user background service: ``evokernel verify`` starts it on first use.

    path, state = ensure("cpu", threads=1)      # reuse the running service, or start one and wait for it
    stop("cpu", 1); stop_all()                   # what --stop-server and the tests' fixtures call

One service per user, backend, thread count, sandbox mode, build cache, EVOKERNEL_*/ASCEND* environment, Python
interpreter and PATH (the *key*). Its files live in the **state directory** (``$EVOKERNEL_VERIFY_STATE``, else
``$XDG_RUNTIME_DIR/evokernel``, else ``<cache>/run``), which must be ours and mode 0700:

* ``v-KEY.json``, the state file: pid, socket, code version, argv, log (written atomically, once the
  service's verifier has started and its socket listens);
* ``v-KEY.sock``, the socket (0600); the service answers only peers of its own uid;
* ``v-KEY.lock``, taken while a client checks or (re)starts the service: two first calls start one service;
* ``v-KEY.log``, the service's output.

A client trusts a state file only when its pid is alive and runs this module with the same argv, the socket
answers a ping from that very process (the peer pid through SO_PEERCRED, and the pid in the reply) and the
reply's code version equals the client's. Anything else is stale: a live service of an older version is
asked to stop (SIGTERM if it does not), a dead one's files are removed, a foreign process (a recycled pid)
is left alone; then a new service starts. The **code version** hashes the package version, torch's version
and the size and mtime of every file of the evokernel package (the verifier included), so an upgrade or an
edit never gets verdicts from an old service; the service also refuses a request whose version differs.
The service stops after ``$EVOKERNEL_VERIFY_IDLE`` seconds (default 600) without a request, on SIGTERM
and on ``evokernel verify --stop-server``. The client side never imports torch.
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evokernel.cli import verify_server
from evokernel.runtime.code_version import code_version
from evokernel.runtime.paths import default_cache_dir
from evokernel.runtime.processes import pid_alive

STATE_ENV = "EVOKERNEL_VERIFY_STATE"
IDLE_ENV = "EVOKERNEL_VERIFY_IDLE"
START_ENV = "EVOKERNEL_VERIFY_START_TIMEOUT"
DEFAULT_IDLE_S = 600.0
DEFAULT_START_S = 300.0  # starting the sandboxes on a loaded machine; cold builds happen per verdict, later
_PRIVATE_ENV = (STATE_ENV, IDLE_ENV, START_ENV)


class DaemonError(Exception):
    """The service could not be found or started (the CLI then verifies in-process and says why)."""


# --- where ---------------------------------------------------------------------------------------
def state_dir() -> Path:
    """The state directory (created 0700; DaemonError when it is not ours or others can enter it)."""
    if os.environ.get(STATE_ENV):
        d = Path(os.environ[STATE_ENV])
    elif os.environ.get("XDG_RUNTIME_DIR"):
        d = Path(os.environ["XDG_RUNTIME_DIR"]) / "evokernel"
    else:
        d = default_cache_dir() / "run"
    try:
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        st = d.lstat()
    except OSError as exc:
        raise DaemonError(f"cannot create the state directory {d}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        raise DaemonError(f"{d} is not a directory of this user: no warm verifier")
    if st.st_mode & 0o077:
        try:
            os.chmod(d, 0o700)
        except OSError as exc:
            raise DaemonError(f"{d} is open to other users and cannot be closed: {exc.strerror}") from None
    return d


# the environment a verdict depends on: EvoKernel's own settings, and the Ascend toolkit's (the ascend backend finds
# CANN and the NPU through them): a daemon started under other values is another daemon
_KEY_ENV_PREFIXES = ("EVOKERNEL_", "ASCEND_", "ASCEND", "NPU_", "LD_LIBRARY_PATH")


def key(backend: str, threads: int) -> str:
    env = sorted((k, v) for k, v in os.environ.items()
                 if k.startswith(_KEY_ENV_PREFIXES) and k not in _PRIVATE_ENV and k != "EVOKERNEL_CACHE")  # resolved below
    # the interpreter (another venv runs other code) and PATH (the sandbox and compilers it finds) too
    ident = json.dumps([os.getuid(), backend, threads, verify_server.sandbox_setting(),
                        str(default_cache_dir().resolve()), env, sys.executable, os.environ.get("PATH", "")])
    return hashlib.sha256(ident.encode()).hexdigest()[:16]


class Files:
    """The four files of one service."""

    def __init__(self, backend: str, threads: int, directory: Path | None = None):
        self.dir = directory or state_dir()
        k = key(backend, threads)
        self.state, self.socket = self.dir / f"v-{k}.json", self.dir / f"v-{k}.sock"
        self.lock, self.log = self.dir / f"v-{k}.lock", self.dir / f"v-{k}.log"

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        fd = os.open(self.lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def read(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.state.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def write(self, state: dict[str, Any]) -> None:
        tmp = self.state.with_name(f".{self.state.name}.{os.getpid()}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(state, fh)
        os.replace(tmp, self.state)


# --- which code: evokernel.runtime.code_version (a run's reused verdicts check it too) ---


# --- client ----------------------------------------------------------------------------------------
def _argv(backend: str, threads: int, idle: float) -> list[str]:
    return [sys.executable, "-m", "evokernel.cli.verify_daemon", "--backend", backend, "--threads", str(threads),
            "--idle-timeout", f"{idle:g}"]


def _runs(pid: int, argv: list[str]) -> bool:
    """Whether ``pid`` is alive and runs ``argv`` (a recycled pid runs something else)."""
    if not pid_alive(pid):
        return False
    try:
        args = [a.decode(errors="replace") for a in Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") if a]
    except OSError:
        return False
    return args == argv


def ping(sock: Path, timeout: float = 5.0) -> dict[str, Any] | None:
    """Who listens on ``sock`` (the kernel's peer pid and uid, SO_PEERCRED) and its ping reply (``reply`` None
    when it is busy with a verdict past ``timeout``). None when nobody listens."""
    if not sock.exists():
        return None
    from evokernel.verifier import message_codec as codec  # lazy: only when a daemon is there to ask

    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.settimeout(timeout)
        try:
            s.connect(str(sock))
            creds = s.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return None
        peer_pid, peer_uid, _ = struct.unpack("3i", creds)
        try:
            codec.send(s.fileno(), {"op": "ping"})
            reply = codec.recv(s.fileno(), time.monotonic() + timeout, max_message=1 << 20)
        except (OSError, codec.ProtocolError):
            reply = None  # one verdict at a time: a busy service answers later
    finally:
        s.close()
    if reply is not None and not (isinstance(reply, dict) and reply.get("ok")):
        return None
    return {"peer_pid": peer_pid, "peer_uid": peer_uid, "reply": reply}


def usable(files: Files, state: dict[str, Any] | None, version: str) -> bool:
    """The state names a live service of this user and this code version, listening on its socket."""
    if not state or state.get("version") != version or not isinstance(state.get("pid"), int):
        return False
    if state.get("socket") != str(files.socket) or not _runs(state["pid"], list(state.get("argv") or [])):
        return False
    who = ping(files.socket)
    if not who or who["peer_uid"] != os.getuid() or who["peer_pid"] != state["pid"]:
        return False
    reply = who["reply"]
    return reply is None or (reply.get("pid") == state["pid"] and reply.get("version") == version)


def _retire(files: Files, state: dict[str, Any] | None) -> None:
    """Stop the service a stale state names (when it is still ours and alive), and remove its files."""
    pid = state.get("pid") if state else None
    if isinstance(pid, int) and _runs(pid, list(state.get("argv") or [])):
        try:
            verify_server.request(files.socket, {"op": "stop"}, timeout=10)
        except verify_server.NoServer:
            pass
        deadline = time.monotonic() + 15
        while pid_alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if pid_alive(pid) and _runs(pid, list(state.get("argv") or [])):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
    for p in (files.state, files.socket):
        with contextlib.suppress(OSError):
            p.unlink()


def _start(files: Files, backend: str, threads: int) -> dict[str, Any]:
    idle = float(os.environ.get(IDLE_ENV) or DEFAULT_IDLE_S)
    argv = _argv(backend, threads, idle)
    log = os.open(files.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        # it outlives this directory: its cwd is /, the build cache named absolutely (as the key has it)
        env = {**os.environ, STATE_ENV: str(files.dir.resolve()), "EVOKERNEL_CACHE": str(default_cache_dir().resolve())}
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True,
                                close_fds=True, cwd="/", env=env)
    finally:
        os.close(log)
    deadline = time.monotonic() + float(os.environ.get(START_ENV) or DEFAULT_START_S)
    while time.monotonic() < deadline:
        state = files.read()
        if state and state.get("pid") == proc.pid:
            return state
        if proc.poll() is not None:
            raise DaemonError(f"the warm verifier exited while starting ({proc.returncode}): {_tail(files.log)}")
        time.sleep(0.05)
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGTERM)
    raise DaemonError(f"the warm verifier did not start within the deadline: {_tail(files.log)}")


def _tail(path: Path, n: int = 8) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").strip().splitlines()[-n:]) or f"(no output; {path})"
    except OSError:
        return f"(no log at {path})"


def ensure(backend: str, threads: int) -> tuple[Path, dict[str, Any]]:
    """The socket of a usable service for these settings and its state (started, and waited for, if needed)."""
    files, version = Files(backend, threads), code_version()
    state = files.read()
    if usable(files, state, version):
        return files.socket, state
    with files.locked():  # a concurrent first call waits here, then finds the service this one started
        state = files.read()
        if usable(files, state, version):
            return files.socket, state
        _retire(files, state)
        return files.socket, _start(files, backend, threads)


def stop(backend: str, threads: int, directory: Path | None = None) -> bool:
    """Stop the service of these settings; False when none was running."""
    files = Files(backend, threads, directory)
    with files.locked():
        state = files.read()
        running = bool(state) and isinstance(state.get("pid"), int) and _runs(state["pid"], list(state.get("argv") or []))
        _retire(files, state)
        return running


def stop_all(directory: Path | None = None) -> list[int]:
    """Stop every service recorded in the state directory (the tests' fixture); returns their pids."""
    d = directory or state_dir()
    stopped = []
    for path in sorted(d.glob("v-*.json")):
        files = Files.__new__(Files)
        files.dir, files.state = d, path
        files.socket, files.lock, files.log = (path.with_suffix(s) for s in (".sock", ".lock", ".log"))
        with files.locked():
            state = files.read()
            if state and isinstance(state.get("pid"), int) and _runs(state["pid"], list(state.get("argv") or [])):
                stopped.append(state["pid"])
            _retire(files, state)
    return stopped


# --- the service -----------------------------------------------------------------------------------
def serve(backend: str, threads: int, idle: float | None) -> None:
    """Run the service for these settings (in this process) and record it in the state file once it listens."""
    files, version = Files(backend, threads), code_version()

    def ready(server: verify_server.Server) -> None:
        server.info = {"version": version}
        files.write({"pid": os.getpid(), "socket": str(files.socket), "version": version, "backend": backend,
                     "threads": threads, "argv": _cmdline(),
                     "log": str(files.log), "started": time.time(), "idle_timeout": idle})
        print(f"evokernel verify server: backend {backend}, {threads} thread(s), sandbox {server.verifier.sandbox}, "
              f"listening on {files.socket}" + (f" (stops after {idle:.0f} s idle)" if idle else ""),
              file=sys.stderr, flush=True)

    try:
        verify_server.Server(backend, threads, files.socket, idle).run(ready)
    finally:
        state = files.read()
        if state and state.get("pid") == os.getpid():
            with contextlib.suppress(OSError):
                files.state.unlink()


def _cmdline() -> list[str]:
    return [a.decode(errors="replace") for a in Path(f"/proc/{os.getpid()}/cmdline").read_bytes().split(b"\0") if a]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m evokernel.cli.verify_daemon",
                                 description="the warm verifier's background service (started by evokernel verify)")
    ap.add_argument("--backend", required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_S)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    serve(args.backend, args.threads, args.idle_timeout if args.idle_timeout > 0 else None)


if __name__ == "__main__":
    main()
