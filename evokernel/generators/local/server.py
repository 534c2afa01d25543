"""A managed llama.cpp server on 127.0.0.1 for ``--model local:NAME|PATH``.

    server = ManagedServer(resolve_model("qwen2.5-coder-1.5b")).ensure()   # start, or reuse a running one
    chat, prices = local_chat_model("qwen2.5-coder-1.5b")                   # ChatOpenAI bound to it, price 0

The server is ``python -m llama_cpp.server`` (llama-cpp-python, the ``local`` extra) bound to 127.0.0.1 on a
free port; ``EVOKERNEL_LOCAL_SERVER_CMD`` replaces the command (a template with ``{model}``, ``{host}``,
``{port}``, ``{alias}``, ``{n_ctx}``, ``{threads}``, e.g. llama.cpp's own ``llama-server``). Readiness is
``GET /v1/models`` answering 200. One state file per model under ``<cache>/servers`` (pid, port, model
sha/key, log, clients) lets other evokernel processes reuse a running server; the last client to leave
stops it (at exit). Requests go through an httpx transport that checks the server first: a dead server
(found on a failed request or a health check) is restarted and the request retried once; the server's
output goes to ``<cache>/logs/server-<alias>.log``, named in every error.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx

from evokernel.generators.local.models import LocalModel, LocalModelError, resolve_model
from evokernel.generators.pricing import Price, Prices
from evokernel.runtime.paths import default_cache_dir
from evokernel.runtime.processes import pid_alive as _pid_alive

__all__ = ["HOST", "ManagedServer", "ManagedTransport", "ServerError", "local_chat_model", "running_servers",
           "shared_server", "stop_servers"]

HOST = "127.0.0.1"  # never anything else
CMD_ENV = "EVOKERNEL_LOCAL_SERVER_CMD"
CTX_ENV = "EVOKERNEL_LOCAL_CTX"
THREADS_ENV = "EVOKERNEL_LOCAL_THREADS"
READY_TIMEOUT_ENV = "EVOKERNEL_LOCAL_READY_TIMEOUT"
DEFAULT_CTX = 8192
# A small model may not stop by itself (the server's default is "until n_ctx"). 1024 tokens hold a cpu-l1
# kernel with room to spare; the 1,510-token reply seen in a real run was a kernel plus a long essay, and
# on 2 cores every output token costs ~40 ms.
DEFAULT_MAX_TOKENS = 1024
# What the prompt may spend on retrieved context (PromptOptions.max_context_chars; 24,000 for remote
# models): measured, a weak model's first prompt with four template traces was 5,523 tokens, 68 s of
# prompt evaluation at 81 tok/s on 2 cores, and near the 8,192-token window of the server. 6,000
# characters (~1,700 tokens) keep one or two traces plus the notes.
LOCAL_CONTEXT_CHARS = 6_000
DEFAULT_READY_TIMEOUT_S = 180.0
MIN_TIMEOUT_S = 1800.0  # per call
MAX_RESTARTS = 3
# the watchdog beside every server we start: a server whose clients all died without releasing it (killed,
# crashed, a test runner torn down) is stopped after this grace instead of holding its RAM and CPU forever
WATCH_ENV = "EVOKERNEL_LOCAL_WATCH"  # "INTERVAL_S,GRACE_S"
DEFAULT_WATCH = (5.0, 30.0)


class ServerError(LocalModelError):
    """The managed server could not be started, became unhealthy, or crashed too often."""


def servers_dir(cache_dir: Path | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / "servers"


def logs_dir(cache_dir: Path | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / "logs"


def free_port(prefer: int | None = None) -> int:
    """A free TCP port on 127.0.0.1 (``prefer`` when it is free)."""
    for port in ([prefer] if prefer else []) + [0]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((HOST, port))
            except OSError:
                continue
            return s.getsockname()[1]
    raise ServerError("no free port on 127.0.0.1")


def default_command(model: LocalModel, port: int, n_ctx: int, threads: int) -> list[str]:
    template = os.environ.get(CMD_ENV)
    values = {"model": str(model.path), "host": HOST, "port": str(port), "alias": model.alias,
              "n_ctx": str(n_ctx), "threads": str(threads), "python": sys.executable}
    if template:
        if "{host}" not in template or "{port}" not in template:
            raise ServerError(f"{CMD_ENV} must bind the server with {{host}} and {{port}} (127.0.0.1 and a free "
                              f"port): {template!r}")
        return [arg.format(**values) for arg in shlex.split(template)]
    # logits_all false: the server's default (true, for logprobs) keeps a float per vocabulary entry for every
    # token of the context (~0.6 MB a token with Qwen's 152k vocabulary: +1.9 GB RSS after one 2k-token draft
    # prompt) and computes all those logits (prompt evaluation 1.35-1.6x slower here)
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(model.path), "--host", HOST,
            "--port", str(port), "--model_alias", model.alias, "--n_ctx", str(n_ctx), "--n_threads", str(threads),
            "--n_threads_batch", str(threads), "--logits_all", "false"]


def _same_process(pid: int, cmd: list[str]) -> bool:
    """Whether ``pid`` still runs ``cmd`` (guards against a recycled pid before a kill)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return _pid_alive(pid)
    args = [a.decode(errors="replace") for a in argv if a]
    # a script started through its #! line runs as [interpreter, script, args...]: compare the arguments
    # (they name the model and the port)
    return args == cmd or (len(cmd) > 1 and args[-(len(cmd) - 1):] == cmd[1:])


def healthy(port: int, timeout: float = 2.0) -> bool:
    """GET /v1/models answers 200 (llama_cpp.server answers it only between completions: see accepting)."""
    try:
        r = httpx.get(f"http://{HOST}:{port}/v1/models", timeout=timeout, trust_env=False)  # no proxy
    except httpx.HTTPError:
        return False
    return r.status_code == 200


def accepting(port: int, timeout: float = 1.0) -> bool:
    """Something accepts TCP connections on 127.0.0.1:port (true of a server busy with a completion, too)."""
    try:
        with socket.create_connection((HOST, port), timeout=timeout):
            return True
    except OSError:
        return False


def listening_addresses(port: int) -> list[str]:
    """Local addresses listening on ``port`` (from /proc/net/tcp*; [] where there is no /proc)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == "0A":  # LISTEN
                addr, _, hexport = fields[1].partition(":")
                if int(hexport, 16) == port:
                    found.append(addr)
    return found


_LOOPBACK = {"0100007F", "00000000000000000000000001000000"}


def _log_tail(path: Path, n: int = 12) -> str:
    """The last ``n`` lines the latest start wrote (from its "=== ... starts:" line on)."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    starts = [i for i, ln in enumerate(lines) if ln.startswith("=== ") and " starts: " in ln]
    lines = lines[starts[-1]:] if starts else lines
    return "\n".join("    " + ln for ln in lines[-n:])


# ---------------------------------------------------------------------------------------------------------
# the managed server
# ---------------------------------------------------------------------------------------------------------
class ManagedServer:
    """One model's server: started here or reused from another evokernel process, restarted when it dies."""

    def __init__(self, model: LocalModel, cache_dir: Path | None = None, *,
                 command: Callable[[LocalModel, int, int, int], list[str]] | None = None,
                 n_ctx: int | None = None, threads: int | None = None, ready_timeout: float | None = None,
                 max_restarts: int = MAX_RESTARTS):
        self.model = model
        self.cache_dir = Path(cache_dir or default_cache_dir())
        self.command = command or default_command
        self.n_ctx = n_ctx or int(os.environ.get(CTX_ENV) or DEFAULT_CTX)
        self.threads = threads or int(os.environ.get(THREADS_ENV) or (os.cpu_count() or 2))
        self.ready_timeout = ready_timeout or float(os.environ.get(READY_TIMEOUT_ENV) or DEFAULT_READY_TIMEOUT_S)
        self.max_restarts = max_restarts
        self.restarts = 0
        self.closing = False  # set by shutdown(): no (re)start from now on
        self.port: int | None = None
        self.pid: int | None = None
        self.cmd: list[str] = []
        self.proc: subprocess.Popen | None = None  # set when this process started it
        self.reused = False
        self.started = False  # the last ensure() started a server (rather than reusing one)
        self.startup_s: float | None = None
        self.log_path = logs_dir(self.cache_dir) / f"server-{model.alias}.log"
        self.state_path = servers_dir(self.cache_dir) / f"{model.key}.json"
        self._lock = threading.RLock()
        self._atexit = False
        self._process = os.getpid()  # a forked child inherits this object but neither the child process nor the lease

    # -- state file -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """This thread and every other evokernel process, for one model's state."""
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        with self._lock, open(self.state_path.with_suffix(".lock"), "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _read_state(self) -> dict[str, Any] | None:
        try:
            state = json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return None
        return state if isinstance(state, dict) else None

    def _write_state(self, state: dict[str, Any]) -> None:
        tmp = self.state_path.with_name(f".{self.state_path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(state, indent=1))
        os.replace(tmp, self.state_path)

    def _state(self, clients: list[int]) -> dict[str, Any]:
        return {"pid": self.pid, "port": self.port, "host": HOST, "model": str(self.model.path),
                "alias": self.model.alias, "model_key": self.model.key, "model_sha256": self.model.sha256,
                "log": str(self.log_path), "cmd": self.cmd, "n_ctx": self.n_ctx, "threads": self.threads,
                "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "started_by": os.getpid(),
                "startup_s": self.startup_s, "clients": clients}

    # -- lifecycle --------------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        if self.port is None:
            raise ServerError("the server is not started (call ensure())")
        return f"http://{HOST}:{self.port}/v1"

    def ensure(self) -> ManagedServer:
        """Reuse a healthy server of this model (recorded in the state file), or start one."""
        with self._locked():
            state = self._read_state()
            if state and self._usable(state):
                self.pid, self.port, self.cmd = state["pid"], int(state["port"]), list(state.get("cmd") or [])
                self.reused = self.proc is None or self.proc.pid != self.pid
                clients = [c for c in state.get("clients", []) if isinstance(c, int) and _pid_alive(c)]
                state["clients"] = sorted(set(clients) | {os.getpid()})
                self._write_state(state)
                self.started = False
            else:
                clients = []
                if state and isinstance(state.get("pid"), int) and _pid_alive(state["pid"]) \
                        and _same_process(state["pid"], list(state.get("cmd") or [])):
                    _terminate(state["pid"])  # alive but not accepting connections: hung
                if state:  # a restart keeps the other clients of the dead server
                    clients = [c for c in state.get("clients", []) if isinstance(c, int) and _pid_alive(c)]
                self._start(prefer_port=int(state["port"]) if state and state.get("port") else None)
                self._write_state(self._state(sorted(set(clients) | {os.getpid()})))
                self._watch()  # after the state names the new server: the watchdog reads it first thing
                self.started = True
        if not self._atexit:
            atexit.register(self.release)
            self._atexit = True
        return self

    def _usable(self, state: dict[str, Any]) -> bool:
        """The recorded server is this model's, its process lives and it accepts connections.

        Not GET /v1/models: llama_cpp.server holds that request while it computes a completion for
        another client, and a busy server is still a server to reuse.
        """
        pid, port = state.get("pid"), state.get("port")
        return state.get("model_key") == self.model.key and isinstance(pid, int) and isinstance(port, int) \
            and _pid_alive(pid) and _same_process(pid, list(state.get("cmd") or [])) and accepting(port)

    def _start(self, prefer_port: int | None = None) -> None:
        self._terminate_own()
        port = free_port(prefer_port)
        self.cmd = self.command(self.model, port, self.n_ctx, self.threads)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} evokernel (pid {os.getpid()}) starts: "
                      f"{shlex.join(self.cmd)}\n".encode())
            log.flush()
            try:
                self.proc = subprocess.Popen(self.cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                             start_new_session=True, close_fds=True)
            except OSError as exc:
                raise ServerError(f"cannot start the local model server ({shlex.join(self.cmd)}): {exc}") from None
        self.pid, self.port = self.proc.pid, port
        self._wait_ready(started)
        self.startup_s = time.monotonic() - started
        bad = [a for a in listening_addresses(port) if a not in _LOOPBACK]
        if bad:
            self._terminate_own()
            raise ServerError(f"the server listened on a non-loopback address ({', '.join(bad)}) on port {port}: "
                              f"stopped it; only {HOST} is allowed (command: {shlex.join(self.cmd)})")

    def _watch(self) -> None:
        """Start the watchdog of this server (its own session: it outlives us, that is its point)."""
        with contextlib.suppress(OSError):
            subprocess.Popen([sys.executable, "-m", "evokernel.generators.local.server", "watch", str(self.state_path),
                              str(self.pid)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True, close_fds=True)

    def _wait_ready(self, started: float) -> None:
        assert self.proc is not None
        delay = 0.05
        while True:
            code = self.proc.poll()
            if code is not None:
                self.proc = None
                raise ServerError(f"the local model server exited with code {code} before it was ready "
                                  f"(model {self.model.path}); its log is {self.log_path}:\n{_log_tail(self.log_path)}"
                                  + self._install_hint())
            if healthy(self.port or 0, timeout=1.0):
                return
            if time.monotonic() - started > self.ready_timeout:
                self._terminate_own()
                raise ServerError(f"the local model server did not answer GET /v1/models within "
                                  f"{self.ready_timeout:g} s (model {self.model.path}, port {self.port}); stopped it. "
                                  f"Its log is {self.log_path}:\n{_log_tail(self.log_path)}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _install_hint(self) -> str:
        text = _log_tail(self.log_path, 40)
        if "No module named" in text and "llama_cpp" in text or "No module named 'uvicorn'" in text:
            return ("\nllama-cpp-python with its server is not installed: pip install 'evokernel[local]' "
                    "(builds llama.cpp, about 5 minutes on 2 cores)")
        return ""

    def alive(self) -> bool:
        if self.proc is not None and self.proc.pid == self.pid and os.getpid() == self._process:
            # a killed multi-threaded process shows as a zombie before waitpid sees it exit
            return self.proc.poll() is None and _pid_alive(self.pid)
        return self.pid is not None and _pid_alive(self.pid)

    def check(self) -> int:
        """Before a request: the port to use, restarting a dead server (a cheap pid check, no request)."""
        with self._lock:
            if self.closing:
                raise ServerError("the run is stopping: this process released the local model server")
            if self.port is None:
                self.ensure()
            elif not self.alive():
                self._restart("it died")
            assert self.port is not None
            return self.port

    def recover(self, exc: BaseException) -> bool:
        """After a failed request: restart a dead server (True: retry the request) or leave a live one (False)."""
        if self.closing:  # released on purpose (Ctrl-C): the failed request is the point, no restart
            return False
        with self._lock:
            deadline = time.monotonic() + 1.0  # a server that just crashed may still be exiting
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.05)
            if self.alive() and accepting(self.port or 0):
                return False
            self._restart(f"a request failed ({type(exc).__name__}: {exc})")
            return True

    def _restart(self, why: str) -> None:
        if self.restarts >= self.max_restarts:
            error = ServerError(f"the local model server is down again ({why}) after {self.restarts} restart(s); "
                                f"giving up. Its log is {self.log_path}:\n{_log_tail(self.log_path)}")
            print(f"evokernel: {error}", file=sys.stderr)  # the OpenAI client reports only "Connection error."
            raise error
        print(f"evokernel: the local model server (pid {self.pid}, port {self.port}) is down: {why}; "
              f"restarting it (log {self.log_path})", file=sys.stderr)
        self.ensure()  # another process may have restarted it already; else start one (on the same port if free)
        if self.started:
            self.restarts += 1

    def _terminate_own(self) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            _terminate(proc.pid, proc)

    def release(self) -> None:
        """At exit: leave the server; the last client stops it (an unused server would hold its RAM)."""
        if self.pid is None or os.getpid() != self._process:
            return
        with self._locked():
            state = self._read_state()
            if state and state.get("pid") == self.pid:
                clients = [c for c in state.get("clients", []) if isinstance(c, int) and c != os.getpid()
                           and _pid_alive(c)]
                if clients:
                    state["clients"] = clients
                    self._write_state(state)
                    self.proc = None  # others use it: it outlives us (start_new_session)
                else:
                    if self.proc is not None and self.proc.pid == self.pid:
                        self._terminate_own()
                    elif _same_process(self.pid, list(state.get("cmd") or [])):
                        _terminate(self.pid)
                    self.state_path.unlink(missing_ok=True)
            else:
                self._terminate_own()  # a server of ours that the state no longer records
        self.pid = self.port = None

    stop = release

    def shutdown(self) -> None:
        """Release the server for good (an interrupted run): a request in flight fails at once instead of
        waiting for a generation that can take minutes, and nothing restarts it."""
        self.closing = True
        self.release()


def _terminate(pid: int, proc: subprocess.Popen | None = None, grace: float = 10.0) -> None:
    try:
        os.killpg(pid, signal.SIGTERM)  # the server leads its own session (start_new_session)
    except (ProcessLookupError, PermissionError):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return
        if proc is None and not _pid_alive(pid):
            return
        time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)


# ---------------------------------------------------------------------------------------------------------
# requests: an httpx transport that checks (and restarts) the server
# ---------------------------------------------------------------------------------------------------------
class ManagedTransport(httpx.BaseTransport):
    """Sends each request to the server's current port; a dead server is restarted and the request retried once."""

    def __init__(self, server: ManagedServer, inner: httpx.BaseTransport | None = None):
        self.server = server
        self.inner = inner or httpx.HTTPTransport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        request.url = request.url.copy_with(host=HOST, port=self.server.check())
        try:
            return self.inner.handle_request(request)
        except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
            if not self.server.recover(exc):
                raise
        request.url = request.url.copy_with(host=HOST, port=self.server.check())
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()


_SHARED: dict[tuple[str, str], ManagedServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(model: LocalModel, cache_dir: Path | None = None) -> ManagedServer:
    """One :class:`ManagedServer` per model and cache in this process (generators share it)."""
    key = (str(Path(cache_dir or default_cache_dir()).resolve()), model.key)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = ManagedServer(model, cache_dir)
        return _SHARED[key]


def shutdown_all() -> None:
    """:meth:`ManagedServer.shutdown` for every server this process uses (Ctrl-C of a run)."""
    with _SHARED_LOCK:
        servers = list(_SHARED.values())
    for server in servers:
        with contextlib.suppress(Exception):
            server.shutdown()


SAMPLING_ENV = "EVOKERNEL_LOCAL_SAMPLING"


def sampling_of(model: LocalModel) -> dict[str, float]:
    """The request's sampling fields: a registry model's recommended ones (`ModelSpec.sampling`), none for a
    user's file or with EVOKERNEL_LOCAL_SAMPLING=server (the server's own defaults then apply)."""
    choice = os.environ.get(SAMPLING_ENV, "model").strip().lower() or "model"
    if choice not in ("model", "server"):
        raise ValueError(f"{SAMPLING_ENV}={choice!r}: expected 'model' (the model's recommended sampling) or "
                         "'server' (llama.cpp's defaults)")
    if choice == "server" or model.spec is None:
        return {}
    return dict(model.spec.sampling)


def local_chat_model(name_or_path: str, *, temperature: float | None = None, timeout: float | None = None,
                     max_tokens: int | None = None, prices: Any = None, cache_dir: Path | None = None,
                     server: ManagedServer | None = None) -> tuple[Any, Any]:
    """(ChatOpenAI bound to the managed server of this model, prices with the model at 0 USD)."""
    from langchain_openai import ChatOpenAI  # lazy: langchain_openai (~1 s), only when a local model is used

    if server is None:
        model = resolve_model(name_or_path, cache_dir)
        if model.spec is None:
            print(f"evokernel: local model {model.path}: {model.info.describe()}", file=sys.stderr)
        server = shared_server(model, cache_dir)
    server.ensure()
    alias = server.model.alias
    limit = max_tokens or DEFAULT_MAX_TOKENS
    # ChatOpenAI sends max_completion_tokens, which llama_cpp.server ignores (it reads max_tokens): both
    kwargs: dict[str, Any] = {"model": alias, "api_key": "local", "base_url": server.base_url, "max_retries": 0,
                              "use_responses_api": False, "max_tokens": limit,
                              "extra_body": {"max_tokens": limit, **sampling_of(server.model)},
                              "http_client": httpx.Client(transport=ManagedTransport(server), trust_env=False)}
    if temperature is not None:
        kwargs["temperature"] = temperature
    # llama_cpp.server finishes a completion whose client gave up, so a timed-out call retried would queue
    # behind it: wait long (one 2048-token reply of the 1.5B model took 2.3 min here; a loaded machine or a
    # larger model takes longer)
    kwargs["timeout"] = max(timeout or 0.0, MIN_TIMEOUT_S)
    chat = ChatOpenAI(**kwargs)
    chat._evokernel_server = server  # type: ignore[attr-defined]  # keeps it reachable (tests, status)
    table = dict((prices or Prices()).table)
    table[alias] = Price(0.0, 0.0)
    return chat, Prices(table, include_defaults=False)


# ---------------------------------------------------------------------------------------------------------
# status and stop (CLI, doctor)
# ---------------------------------------------------------------------------------------------------------
def running_servers(cache_dir: Path | None = None, probe: bool = True) -> list[dict[str, Any]]:
    """Every recorded server: its state plus ``alive`` and ``healthy`` (GET /v1/models when ``probe``)."""
    rows = []
    folder = servers_dir(cache_dir)
    for path in sorted(folder.glob("*.json")) if folder.exists() else []:
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid, port = state.get("pid"), state.get("port")
        alive = isinstance(pid, int) and _pid_alive(pid)
        state.update(state_file=str(path), alive=alive,
                     healthy=bool(alive and probe and isinstance(port, int) and healthy(port)))
        rows.append(state)
    return rows


def stop_servers(cache_dir: Path | None = None, alias: str | None = None) -> list[dict[str, Any]]:
    """Stop recorded servers (all, or those of one model alias) and remove their state files."""
    stopped = []
    for state in running_servers(cache_dir, probe=False):
        if alias and state.get("alias") != alias:
            continue
        if state["alive"] and _same_process(state["pid"], list(state.get("cmd") or [])):
            _terminate(state["pid"])
            stopped.append(state)
        Path(state["state_file"]).unlink(missing_ok=True)
    return stopped


# ---------------------------------------------------------------------------------------------------------
# the watchdog (python -m evokernel.generators.local.server watch STATE PID)
# ---------------------------------------------------------------------------------------------------------
def watch_settings() -> tuple[float, float]:
    text = os.environ.get(WATCH_ENV, "")
    try:
        interval, grace = (float(x) for x in text.split(",")) if text else DEFAULT_WATCH
    except ValueError:
        interval, grace = DEFAULT_WATCH
    return max(interval, 0.05), max(grace, 0.0)


def watch(state_path: Path, pid: int, interval: float | None = None, grace: float | None = None) -> str:
    """Stop server ``pid`` once no client recorded in ``state_path`` has lived for ``grace`` seconds; return
    why the watch ended. Ends by itself when the server dies or the state names another server."""
    default_interval, default_grace = watch_settings()
    interval = default_interval if interval is None else interval
    grace = default_grace if grace is None else grace
    lock_path = state_path.with_suffix(".lock")
    orphaned_since: float | None = None
    while True:
        try:
            state = json.loads(state_path.read_text())
        except (OSError, ValueError):
            return "the state file is gone (the server was released)"
        if state.get("pid") != pid:
            return "the state names another server"
        if not _pid_alive(pid):
            return "the server is gone"
        clients = [c for c in state.get("clients", []) if isinstance(c, int) and _pid_alive(c)]
        if clients:
            orphaned_since = None
        else:
            orphaned_since = orphaned_since or time.monotonic()
            if time.monotonic() - orphaned_since >= grace:
                with open(lock_path, "w") as fh:  # the clients' lock: nobody attaches while we decide
                    fcntl.flock(fh, fcntl.LOCK_EX)
                    try:
                        again = json.loads(state_path.read_text())
                    except (OSError, ValueError):
                        return "the state file is gone (the server was released)"
                    live = [c for c in again.get("clients", []) if isinstance(c, int) and _pid_alive(c)]
                    if again.get("pid") != pid or live:
                        orphaned_since = None
                        continue
                    # the state and the log first: once the server is gone, nothing names it and its log says why
                    state_path.unlink(missing_ok=True)
                    with contextlib.suppress(OSError), open(again.get("log") or os.devnull, "a") as log:
                        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} evokernel watchdog: no live client "
                                  f"for {grace:g} s (clients {again.get('clients')}); stopping the server\n")
                    if _same_process(pid, list(again.get("cmd") or [])):
                        _terminate(pid)
                    return "stopped: no live client"
        time.sleep(interval)


if __name__ == "__main__":  # the watchdog process
    if len(sys.argv) == 4 and sys.argv[1] == "watch":
        with contextlib.suppress(KeyboardInterrupt):
            watch(Path(sys.argv[2]), int(sys.argv[3]))
    else:
        print("usage: python -m evokernel.generators.local.server watch STATE_FILE SERVER_PID", file=sys.stderr)
        sys.exit(2)
