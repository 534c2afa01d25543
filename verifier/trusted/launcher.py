"""Trusted side: how sandboxed processes are started, talked to and killed.

* `sandbox_argv` wraps a command in ``prlimit`` + ``bwrap`` (no network, read-only root, private
  /tmp, home and project folders hidden, environment cleared, fresh pid namespace torn down with
  its parent). Without bubblewrap it falls back to rlimits (and a network namespace as root) and
  says so in every verdict.
* `Zygote` is one pre-started sandbox holding a warm Python + torch that forks a fresh worker per
  request (`verifier/sandboxed/zygote.py`).
* `WorkerHandle` is the parent's end of one worker: one AF_UNIX stream socket (the control channel; a
  frame must echo its request's nonce, and nothing may wait on the socket when a request goes out), a
  shared memory region for tensor bytes, and memory files that receive the worker's stdout and stderr.
  Every memory file is sealed against shrinking before a worker gets it (a candidate truncating the
  region would otherwise kill the parent with SIGBUS when it reads its mapping).
* The launcher processes (prlimit, bwrap and bwrap's init, pid 1 inside the sandbox) start from a fixed
  environment and, under bubblewrap, in ``/``: nothing of the caller's PATH, variables or checkout shows
  in ``/proc/1``.
"""
from __future__ import annotations

import fcntl
import functools
import json
import mmap
import os
import secrets
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from evokernel.verifier import message_codec as codec
from evokernel.verifier.trusted import resource_limits

KEEP_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "LANG")


class SandboxError(RuntimeError):
    """The sandbox itself could not be started (an environment problem, not a verdict)."""


class WorkerDied(RuntimeError):
    def __init__(self, status: dict[str, Any]):
        super().__init__(f"worker died: {status}")
        self.status = status


class WorkerTimeout(RuntimeError):
    pass


def sandbox_mode() -> str:
    """"bwrap" when bubblewrap works here, else "rlimits"; EVOKERNEL_SANDBOX=rlimits forces the fallback."""
    forced = os.environ.get("EVOKERNEL_SANDBOX")
    if forced in {"bwrap", "rlimits"}:
        return forced
    return "bwrap" if shutil.which("bwrap") else "rlimits"


def _package_dirs() -> list[Path]:
    import evokernel.cpu
    import evokernel.verifier

    return [Path(evokernel.cpu.__file__).resolve().parent, Path(evokernel.verifier.__file__).resolve().parent]


@dataclass
class Limits:
    cpu_s: int = 600
    fsize_mb: int = 512
    nofile: int = 1024
    address_space_mb: int | None = None
    tasks: int | None = None  # processes + threads of the whole sandbox (resource_limits.TaskCap)
    tmp_mb: int = resource_limits.CANDIDATE_TMP_MB  # the private /tmp (bubblewrap only)


@dataclass
class SandboxSpec:
    threads: int = 1
    writable: list[Path] = field(default_factory=list)
    readonly: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    limits: Limits = field(default_factory=Limits)
    cwd: Path = Path("/tmp")  # working directory inside the sandbox
    devices: list[Path] = field(default_factory=list)  # device nodes passed through (the NPU's, backend ascend)
    seccomp: str | None = None  # "build": the command runs under the build filter (sandboxed/seccomp_filter.py)
    name: str = "sandbox"  # for its task cgroup
    # (host path, path inside, writable): folders shown at a path of the sandbox's choosing (bubblewrap only)
    mounts: list[tuple[Path, str, bool]] = field(default_factory=list)
    # False: no Python installation, site-packages or evokernel package at their host paths (a build sandbox
    # that shows only neutral paths, build_sandbox.py; its seccomp filter is loaded by bubblewrap)
    host_python: bool = True
    proc: bool = True  # a /proc of the sandbox's own (False: none; it would show the mounts' host sources)
    # bubblewrap's arguments that build the root (None: `_root_binds`, the host's whole /usr; the build sandbox
    # passes only its toolchain's files, build_sandbox.toolchain_root)
    root: list[str] | None = None


def worker_cpus(threads: int) -> list[int]:
    """CPUs the measured workers are pinned to: the last ``threads`` CPUs available to us, so only
    one timed process runs at a time on them and the parent/OS keep the rest. No pinning (empty)
    when that would leave nothing free."""
    try:
        cpus = sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return []
    return cpus[-threads:] if threads < len(cpus) else []


def base_env(threads: int) -> dict[str, str]:
    env = {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LANG": "C.UTF-8",
        "PYTHONNOUSERSITE": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
        "OPENBLAS_NUM_THREADS": str(threads),
        "EVOKERNEL_THREADS": str(threads),
        "EVOKERNEL_CPUS": ",".join(map(str, worker_cpus(threads))),
        "HF_HUB_OFFLINE": "1",
        "TMPDIR": "/tmp",
        # Keep freed memory for reuse instead of returning each large block to the OS: with glibc's
        # defaults every fresh 32 MiB output is mmap'ed and page-faulted again on every call, and
        # eager ReLU at 8M elements measures 21 ms of page faults against 3 ms of work. Both sides
        # run with the same setting (GPU harnesses get the same effect from the caching allocator).
        "GLIBC_TUNABLES": "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=68719476736",
    }
    for key in KEEP_ENV:
        if key in os.environ:
            env[key] = os.environ[key]
    return env


LAUNCH_PATH = "/usr/local/bin:/usr/bin:/bin"


def launch_env() -> dict[str, str]:
    """The environment of the sandbox launcher processes themselves (prlimit, bwrap and bwrap's pid 1).
    Fixed, not the caller's: bwrap's init process inside the sandbox keeps the environment it was started
    with, and any candidate can read it from /proc/1/environ (API keys, the caller's PATH with its home and
    checkout folders) -- the sandboxed command's own environment is set separately (--clearenv / env -i).
    The launchers themselves are named by absolute path (`_tool`), so they need no PATH of the caller's."""
    return {"PATH": LAUNCH_PATH, "LANG": "C.UTF-8"}


def launch_cwd(mode: str, inside: Path | None = None) -> str | None:
    """The working directory a launcher starts in: ``/`` under bubblewrap (bwrap's init keeps it, and
    /proc/1/cwd would show the caller's, e.g. the checkout; the command inside gets --chdir); without
    bubblewrap the command's own folder (``inside``; there is no other way to set it)."""
    if mode == "bwrap":
        return "/"
    return str(inside) if inside is not None and inside.exists() else "/"


def _tool(name: str) -> str:
    """A launcher program by absolute path (found on the caller's PATH, like `sandbox_mode` finds bwrap)."""
    return shutil.which(name) or name


def sealed_memfd(name: str) -> int:
    """A memory file for a worker, sealed so that nobody can shrink it (F_SEAL_SHRINK; it may still grow, and
    the seals themselves are sealed, F_SEAL_SEAL, so a worker cannot forbid the parent to grow or write it)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL)
    except OSError:
        os.close(fd)
        raise
    return fd


# the few host files a sandbox needs besides /usr and the Python installation (no passwd, hostname, ...)
ETC_FILES = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives")


def _root_binds() -> list[str]:
    """A minimal root: /usr, the merged-/usr links (or directories) /bin /lib /lib64 /sbin, a few /etc
    files, the Python installation, its site-packages and the evokernel packages the sandboxed code imports.
    No home, no project checkout, no build cache, no other host file."""
    cmd: list[str] = ["--ro-bind", "/usr", "/usr"]
    for top in ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin"):
        p = Path(top)
        if p.is_symlink():
            cmd += ["--symlink", os.readlink(p), top]
        elif p.is_dir():
            cmd += ["--ro-bind", top, top]
    for f in ETC_FILES:
        if Path(f).exists():
            cmd += ["--ro-bind", f, f]
    return cmd


def sandbox_argv(argv: list[str], spec: SandboxSpec, mode: str | None = None, seccomp_fd: int | None = None
                 ) -> list[str]:
    """The full command line; ``seccomp_fd`` (bubblewrap): a descriptor holding the compiled filter of
    ``spec.seccomp``, which bubblewrap loads into the command (else a Python wrapper installs it, which needs
    the host's Python inside)."""
    mode = mode or sandbox_mode()
    lim = spec.limits
    pre = [_tool("prlimit"), f"--cpu={lim.cpu_s}", f"--fsize={lim.fsize_mb * 1024 * 1024}", f"--nofile={lim.nofile}",
           "--core=0"]
    if lim.address_space_mb:
        pre.append(f"--as={lim.address_space_mb * 1024 * 1024}")
    if lim.tasks:
        pre += resource_limits.task_cap().nproc(lim.tasks)
    pre.append("--")
    env = {**base_env(spec.threads), **spec.env}
    if not spec.host_python:
        env["PATH"] = LAUNCH_PATH  # the Python installation's bin folder is not there (nor named)
    if spec.seccomp and not (mode == "bwrap" and seccomp_fd is not None):
        if not spec.host_python and mode == "bwrap":
            raise SandboxError("a sandbox without the host's Python loads its seccomp filter from a descriptor")
        argv = [sys.executable, "-m", "evokernel.verifier.sandboxed.seccomp_exec", "--", *argv]
    if mode == "bwrap":
        cmd = [_tool("bwrap"), "--unshare-all", "--die-with-parent", "--new-session",
               *(_root_binds() if spec.root is None else spec.root),
               "--dev", "/dev", *(["--proc", "/proc"] if spec.proc else []),
               "--size", str(lim.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]
        expose = set(spec.readonly)
        if spec.host_python:
            expose |= {Path(sys.base_prefix), Path(sys.prefix), *_package_dirs()}
            expose |= {Path(p) for p in sys.path if p and Path(p).is_dir() and "site-packages" in p}
        for p in sorted(expose, key=lambda x: len(x.parts)):
            if p.exists():
                cmd += ["--ro-bind", str(p), str(p)]
        for p in spec.writable:
            cmd += ["--bind", str(p), str(p)]
        for host, inside, writable in sorted(spec.mounts, key=lambda m: len(Path(m[1]).parts)):
            cmd += ["--bind" if writable else "--ro-bind", str(host), inside]
        if spec.seccomp and seccomp_fd is not None:
            cmd += ["--seccomp", str(seccomp_fd)]
        for d in spec.devices:
            cmd += ["--dev-bind", str(d), str(d)]
        cmd += ["--chdir", str(spec.cwd), "--clearenv"]
        for k, v in env.items():
            cmd += ["--setenv", k, v]
        return pre + cmd + argv
    # fallback: rlimits, a cleared environment and (as root) a private network namespace
    cmd = [_tool("env"), "-i", *[f"{k}={v}" for k, v in env.items()]]
    if os.geteuid() == 0 and shutil.which("unshare"):
        cmd = [_tool("unshare"), "--net", "--"] + cmd
    return pre + cmd + argv


def _kill_group(proc: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


@functools.lru_cache(maxsize=None)
def _seccomp_program(mode: str) -> bytes | None:
    from evokernel.verifier.sandboxed.seccomp_filter import filter_program

    return filter_program(mode)


def run_sandboxed(argv: list[str], spec: SandboxSpec, timeout: float, mode: str | None = None
                  ) -> tuple[int | None, str]:
    """Run a one-shot command (a compiler) in a fresh sandbox; returns (rc or None on timeout, output)."""
    mode = mode or sandbox_mode()
    cap = resource_limits.task_cap()
    group = cap.group(spec.name, spec.limits.tasks) if spec.limits.tasks else resource_limits.Group(None, 0)
    program = _seccomp_program(spec.seccomp) if spec.seccomp and mode == "bwrap" else None
    seccomp_fd = None
    if program is not None:
        seccomp_fd = os.memfd_create("seccomp", os.MFD_CLOEXEC)
        os.write(seccomp_fd, program)
        os.lseek(seccomp_fd, 0, os.SEEK_SET)
    try:
        full = cap.wrap(sandbox_argv(argv, spec, mode, seccomp_fd), group)
        with tempfile.TemporaryFile() as out:
            proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    cwd=launch_cwd(mode, spec.cwd), start_new_session=True,
                                    close_fds=True, env=launch_env(),
                                    pass_fds=() if seccomp_fd is None else (seccomp_fd,))
            try:
                rc: int | None = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                rc = None
            _kill_group(proc)  # the whole tree, daemons included (pid-namespace teardown)
            out.seek(0)
            text = out.read(256 * 1024).decode(errors="replace")
        if group.hit():
            text += (f"\n[verifier] the build exceeded its limit of {group.limit} processes and threads")
    finally:
        group.close()
        if seccomp_fd is not None:
            os.close(seccomp_fd)
    return rc, text


class WorkerHandle:
    """The parent's end of one sandboxed worker."""

    def __init__(self, zygote: "Zygote", pid: int, sock: socket.socket, data_fd: int, out_fd: int, err_fd: int,
                 nonce: int):
        self.zygote, self.pid = zygote, pid
        self.sock = sock  # the control channel (AF_UNIX stream; the worker holds the other end)
        self.fd = sock.fileno()
        self._poll = select.poll()  # readable = bytes waiting, or the worker closed its end
        self._poll.register(self.fd, select.POLLIN)
        self.data_fd, self.out_fd, self.err_fd = data_fd, out_fd, err_fd
        self.capacity = 0
        self.mm: mmap.mmap | None = None
        self.closed = False
        self.status: dict[str, Any] | None = None
        self.pending = "hello"  # the request whose reply comes next (a fresh worker says hello first)
        self.nonce = nonce  # the nonce every frame must echo until the next request (the hello: the spawn's)
        self.group = resource_limits.Group(None, 0)  # its task cgroup, when the machine has one

    def ensure_capacity(self, nbytes: int) -> None:
        if nbytes <= self.capacity:
            return
        nbytes = codec.align(nbytes, 1 << 16)
        if os.fstat(self.data_fd).st_size < nbytes:  # never shrink (the file is sealed against it)
            os.ftruncate(self.data_fd, nbytes)
        if self.mm is not None:
            self.mm.close()
        self.mm = mmap.mmap(self.data_fd, nbytes)
        self.capacity = nbytes

    def read(self, meta: codec.TensorMeta) -> bytes:
        assert self.mm is not None
        return self.mm[meta.offset : meta.offset + meta.nbytes]

    def _check_quiet(self) -> None:
        """Nothing may wait on the channel when a request goes out: the worker's loop sends exactly one reply
        per request, so waiting bytes are a frame it did not send (or a second reply) -- ForgedFrame."""
        if not self._poll.poll(0):  # the common case, without an exception (1 us)
            return
        try:
            waiting = self.sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            raise WorkerDied(self.kill()) from None
        if not waiting:  # the worker closed its end
            raise WorkerDied(self.kill())
        raise codec.ForgedFrame(f"bytes were waiting on the worker's channel before the {self.pending!r}"
                                " request was sent: a frame the worker's request loop did not send (or a second "
                                "reply to one request)")

    def send(self, msg: dict[str, Any]) -> None:
        self._check_quiet()
        self.pending = str(msg.get("op"))  # the reply is checked against this request's schema
        self.nonce = secrets.randbits(63)
        try:
            codec.send(self.fd, {**msg, "capacity": self.capacity, "nonce": self.nonce})
        except OSError:
            raise WorkerDied(self.kill()) from None

    def receive(self, deadline: float | None, on_build: Callable[[dict[str, Any]], dict[str, Any]] | None = None
                ) -> dict[str, Any]:
        """Wait for the reply to the last request, validated against its schema (ProtocolError if it is not
        one; ForgedFrame if it does not carry the request's nonce), serving build requests in between
        (validated too; their time extends the deadline)."""
        while True:
            try:
                reply = codec.recv(self.fd, deadline)
            except codec.Timeout:
                raise WorkerTimeout() from None
            except codec.PeerClosed:
                raise WorkerDied(self.kill()) from None
            codec.check_nonce(reply, self.nonce)
            if reply.get("op") == "build":
                t0 = time.monotonic()
                try:
                    request = codec.check_build_request(reply)
                except codec.ProtocolError as exc:
                    answer = {"ok": False, "error": f"malformed build request: {exc}"}
                else:
                    answer = on_build(request) if on_build else {"ok": False, "error": "native builds are not served here"}
                if deadline is not None:
                    deadline += time.monotonic() - t0
                try:
                    codec.send(self.fd, answer)
                except OSError:
                    raise WorkerDied(self.kill()) from None
                continue
            return codec.check_reply(self.pending, reply)

    def call(self, msg: dict[str, Any], timeout: float | None,
             on_build: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> dict[str, Any]:
        self.send(msg)
        return self.receive(None if timeout is None else time.monotonic() + timeout, on_build)

    def _memfd_text(self, fd: int, limit: int) -> tuple[int, str]:
        size = os.fstat(fd).st_size
        data = os.pread(fd, limit, 0) if size else b""
        return size, data.decode(errors="replace")

    def stdout(self, limit: int = 2000) -> tuple[int, str]:
        return self._memfd_text(self.out_fd, limit)

    def stderr_tail(self, limit: int = 2000) -> str:
        size = os.fstat(self.err_fd).st_size
        start = max(0, size - limit)
        return os.pread(self.err_fd, limit, start).decode(errors="replace") if size else ""

    def kill(self) -> dict[str, Any]:
        """Kill the worker (and anything it left running); returns its exit status."""
        if self.status is None:
            self.status = self.zygote.kill(self.pid)
        return self.status

    def limit_hit(self) -> str:
        """A sentence when the worker was refused a thread or process by its task limit, else ''."""
        if self.group.hit():
            return (f"the candidate exceeded its limit of {self.group.limit} threads and processes (a kernel "
                    "may use OpenMP's threads, not start its own)")
        return ""

    def close(self) -> dict[str, Any]:
        status = self.kill()
        self.group.close()
        if not self.closed:
            self.closed = True
            if self.mm is not None:
                self.mm.close()
            self.sock.close()
            for fd in (self.data_fd, self.out_fd, self.err_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
        return status


class Zygote:
    """A pre-started sandbox with torch imported that forks one fresh worker per request."""

    def __init__(self, threads: int = 1, readonly: list[Path] | None = None, label: str = "worker",
                 start_timeout: float = 120.0, writable: list[Path] | None = None,
                 env: dict[str, str] | None = None, mode: str | None = None):
        self.threads, self.label = threads, label
        self.readonly = list(readonly or [])
        self.writable = list(writable or [])
        self.env = dict(env or {})
        self.start_timeout = start_timeout
        if mode not in (None, "bwrap", "rlimits"):
            raise ValueError(f"unknown sandbox mode {mode!r} (bwrap or rlimits)")
        self.mode = mode or sandbox_mode()
        self.proc: subprocess.Popen[Any] | None = None
        self.sock: socket.socket | None = None
        self.pid_namespace = False
        self._spawned = 0
        self.group = resource_limits.Group(None, 0)  # the sandbox's task cgroup (resource_limits.TaskCap)

    def launch(self) -> None:
        """Start the sandbox process without waiting for it to be ready.

        Call from a long-lived thread: bwrap's --die-with-parent fires when the *thread* that
        started it exits.
        """
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        spec = SandboxSpec(threads=self.threads, readonly=self.readonly, writable=self.writable,
                           env={**self.env, "EVOKERNEL_ZYGOTE_FD": str(child.fileno())},
                           limits=Limits(cpu_s=1_000_000, tasks=resource_limits.SANDBOX_TASKS), name=self.label)
        cap = resource_limits.task_cap()
        self.group.close()
        self.group = cap.group(self.label, resource_limits.SANDBOX_TASKS)
        argv = cap.wrap(sandbox_argv([sys.executable, "-m", "evokernel.verifier.sandboxed.zygote"], spec, self.mode),
                        self.group)
        self._log = tempfile.TemporaryFile()
        try:
            self.proc = subprocess.Popen(argv, pass_fds=(child.fileno(),), stdin=subprocess.DEVNULL,
                                         stdout=self._log, stderr=self._log, start_new_session=True, env=launch_env(),
                                         cwd=launch_cwd(self.mode, spec.cwd))
        except OSError as exc:
            parent.close()
            raise SandboxError(f"cannot start the {self.label} sandbox ({argv[0]}): {exc}") from None
        finally:
            child.close()
        self.sock = parent

    def wait_ready(self) -> "Zygote":
        try:
            hello = self._recv(self.start_timeout)
        except (SandboxError, OSError) as exc:
            log = self.log_tail()
            self.close()
            hint = ("\n(bubblewrap could not create its sandbox here; to run with rlimits + seccomp only, "
                    "set EVOKERNEL_SANDBOX=rlimits)" if self.mode == "bwrap" else "")
            raise SandboxError(f"the {self.label} sandbox did not start: {exc}\n{log.strip()}{hint}") from None
        self.pid_namespace = bool(hello.get("pid_namespace"))
        return self

    def start(self) -> "Zygote":
        self.launch()
        return self.wait_ready()

    def log_tail(self, limit: int = 3000) -> str:
        try:
            self._log.seek(0)
            return self._log.read()[-limit:].decode(errors="replace")
        except (OSError, AttributeError, ValueError):
            return ""

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _recv(self, timeout: float) -> dict[str, Any]:
        if self.sock is None:
            raise SandboxError(f"the {self.label} sandbox is not running")
        self.sock.settimeout(timeout)
        try:
            data = self.sock.recv(1 << 20)
        except socket.timeout:
            raise SandboxError("the sandbox did not answer in time") from None
        if not data:
            raise SandboxError("the sandbox exited")
        try:
            return codec.decode(data)
        except codec.ProtocolError as exc:
            raise SandboxError(f"the {self.label} sandbox sent a malformed message: {exc}") from None

    def _request(self, msg: dict[str, Any], fds: list[int] | None = None, timeout: float = 30.0) -> dict[str, Any]:
        if self.sock is None:
            raise SandboxError(f"the {self.label} sandbox is not running")
        try:
            socket.send_fds(self.sock, [json.dumps(msg).encode()], fds or [])
        except OSError as exc:
            raise SandboxError(f"the sandbox is gone: {exc}") from None
        return self._recv(timeout)

    def spawn(self, role: str, memory_mb: int, cpu_s: int, fsize_mb: int = 64,
              cpus: list[int] | None = None) -> WorkerHandle:
        """A fresh worker; ``cpus`` pins it elsewhere than the timed workers' CPUs (None: those CPUs)."""
        if not self.alive():
            self.start()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        data = sealed_memfd(f"evk-{role}-data")
        out = sealed_memfd(f"evk-{role}-stdout")
        err = sealed_memfd(f"evk-{role}-stderr")
        nonce = secrets.randbits(63)
        self._spawned += 1
        try:
            reply = self._request({"op": "spawn", "role": role, "memory_mb": memory_mb, "cpu_s": cpu_s,
                                   "fsize_mb": fsize_mb, "cpus": cpus, "nonce": nonce,
                                   "scratch": f"/tmp/{role}-{self._spawned}"}, [theirs.fileno(), data, out, err])
        except BaseException:
            ours.close()
            for fd in (data, out, err):
                os.close(fd)
            raise
        finally:
            theirs.close()
        handle = WorkerHandle(self, int(reply["pid"]), ours, data, out, err, nonce)
        try:
            hello = handle.receive(time.monotonic() + 60)
        except (WorkerDied, WorkerTimeout, codec.ProtocolError) as exc:
            tail = handle.stderr_tail()
            handle.close()
            raise SandboxError(f"a {role} worker did not start: {exc}; stderr: {tail}") from None
        if hello.get("op") != "hello":
            handle.close()
            raise SandboxError(f"a {role} worker sent {hello!r} instead of hello")
        if self.group.path is not None:  # its own task cap, before it is sent any candidate code
            try:
                from evokernel.verifier.trusted.cpu_isolation import host_pid

                assert self.proc is not None
                handle.group = self.group.child(role, resource_limits.worker_tasks(self.threads))
                handle.group.add(host_pid(self.proc.pid, handle.pid, self.pid_namespace))
            except (OSError, RuntimeError) as exc:
                handle.close()
                raise SandboxError(f"could not cap the tasks of a {role} worker: {exc}") from None
        return handle

    def kill(self, pid: int) -> dict[str, Any]:
        try:
            reply = self._request({"op": "kill", "pid": pid}, timeout=20)
            return dict(reply.get("status") or {}) | {"stray_killed": reply.get("stray_killed", 0)}
        except SandboxError:
            # the zygote itself is unresponsive: tear the whole sandbox down
            self.close()
            return {"unknown": True, "sandbox_restarted": True}

    def close(self) -> None:
        if self.proc is not None:
            _kill_group(self.proc)
            self.proc = None
        if self.sock is not None:
            self.sock.close()
            self.sock = None
        self.group.close()
