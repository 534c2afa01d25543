"""Runs INSIDE the sandbox: the pre-started process that forks one fresh worker per request.

Started by `evokernel.verifier.trusted.launcher` under bubblewrap (or rlimits only), it imports
torch once (about 1.5 s here) so that each candidate gets a fresh, already-warm process in a few
milliseconds. It talks to the parent over a SOCK_SEQPACKET socket (fd given in
EVOKERNEL_ZYGOTE_FD); a spawn request carries the new worker's control socket (its end of a socketpair
the parent made) and its sealed shared-memory files as SCM_RIGHTS file descriptors.

Each forked worker: starts its own session, keeps only its own descriptors (stdout and stderr go
to parent-owned memory files), applies resource limits, for candidates installs the seccomp
filter (which also pins the control socket: only sendmsg may write to it), and then serves
requests. After a worker ends, the zygote kills whatever else is left in the sandbox's process
namespace.
"""
from __future__ import annotations

import ctypes
import json
import os
import shutil
import signal
import socket
import sys
import traceback
from typing import Any

PR_SET_DUMPABLE = 4
MAX_FDS = 8


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    sock.send(json.dumps(msg).encode())


def _status(code: int) -> dict[str, Any]:
    if os.WIFSIGNALED(code):
        return {"signal": os.WTERMSIG(code)}
    return {"exited": os.WEXITSTATUS(code) if os.WIFEXITED(code) else code}


def _child(msg: dict[str, Any], fds: list[int], sock: socket.socket) -> None:
    """In the forked worker; never returns."""
    code = 70
    try:
        ctrl, data_fd, out_fd, err_fd = fds
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(err_fd, 2)
        keep = {0, 1, 2, ctrl, data_fd}
        sock.detach()
        for name in os.listdir("/proc/self/fd"):
            fd = int(name)
            if fd not in keep:
                try:
                    os.close(fd)
                except OSError:
                    pass
        scratch = msg["scratch"]
        os.makedirs(scratch, exist_ok=True)
        os.chdir(scratch)
        from evokernel.verifier.sandboxed import seccomp_filter

        cpus = msg.get("cpus") or [int(c) for c in os.environ.get("EVOKERNEL_CPUS", "").split(",") if c]
        if cpus:
            try:
                os.sched_setaffinity(0, cpus)  # one timed process at a time on these cores
            except OSError:
                pass
        seccomp_filter.apply_limits(int(msg["memory_mb"]), int(msg["cpu_s"]), int(msg.get("fsize_mb", 64)))
        from evokernel.verifier.message_codec import WorkerChannel
        from evokernel.verifier.sandboxed.worker import Worker

        channel = WorkerChannel(ctrl, int(msg["nonce"]))
        if msg["role"] == "candidate":
            seccomp_filter.install_seccomp("run", control_fd=ctrl)
        Worker(msg["role"], channel, data_fd).serve()
        code = 0
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        code = 71
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _sweep(children: dict[int, Any]) -> int:
    """Kill every process in this pid namespace except ourselves, our parent and live workers."""
    keep = {1, os.getpid(), os.getppid(), *children}
    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        pid = int(name)
        if pid in keep:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
            killed += 1
        except OSError:
            pass
    return killed


def _wipe_tmp() -> None:
    for name in os.listdir("/tmp"):
        path = os.path.join("/tmp", name)
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
        except OSError:
            pass


def main() -> None:
    sock = socket.socket(fileno=int(os.environ["EVOKERNEL_ZYGOTE_FD"]))
    threads = int(os.environ.get("EVOKERNEL_THREADS", "1"))
    import torch  # noqa: F401 - warm the import once for every worker

    import evokernel.cpu  # noqa: F401
    from evokernel.verifier.sandboxed import op_recorder, seccomp_filter, worker  # noqa: F401

    torch.set_num_threads(threads)
    # warm the operator recorder once here (its first use costs ~1.4 s of lazy initialisation);
    # tiny single-threaded ops do not start an OpenMP pool, so forking stays safe
    with torch.no_grad(), op_recorder.OpRecorder():
        (torch.ones(4) * 2).sum()
    # workers may not read our memory through /proc/<pid>/mem or ptrace us
    ctypes.CDLL(None).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)
    in_pid_ns = os.getpid() <= 3
    _send(sock, {"op": "hello", "pid": os.getpid(), "pid_namespace": in_pid_ns})
    children: dict[int, str] = {}
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 1 << 20, MAX_FDS)
        except OSError:
            return
        if not data:
            return
        msg = json.loads(data)
        op = msg.get("op")
        if op == "spawn":
            pid = os.fork()
            if pid == 0:
                _child(msg, fds, sock)
            for fd in fds:
                os.close(fd)
            children[pid] = msg["role"]
            _send(sock, {"ok": True, "pid": pid})
        elif op == "kill":
            for fd in fds:
                os.close(fd)
            pid = int(msg["pid"])
            status: dict[str, Any] = {"unknown": True}
            if pid in children:
                # a worker that closed its pipes may still run: always kill before waiting
                for target in (-pid, pid):
                    try:
                        os.kill(target, signal.SIGKILL)
                    except OSError:
                        pass
                _, code = os.waitpid(pid, 0)
                status = _status(code)
            role = children.pop(pid, None)
            stray = _sweep(children) if in_pid_ns and msg.get("sweep", True) else 0
            if in_pid_ns and role == "candidate" and "candidate" not in children.values():
                _wipe_tmp()  # nothing a candidate wrote survives it (the sandbox's /tmp is private)
            # reap whatever the sweep killed
            while True:
                try:
                    wpid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if wpid == 0:
                    break
            _send(sock, {"ok": True, "status": status, "stray_killed": stray})
        elif op == "ping":
            _send(sock, {"ok": True})
        elif op == "exit":
            return
        else:
            _send(sock, {"ok": False, "error": f"unknown op {op!r}"})


if __name__ == "__main__":
    main()
