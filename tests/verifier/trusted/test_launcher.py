"""The parent's end of a worker (verifier/trusted/launcher.py), without a sandbox: a WorkerHandle on one end of
a socketpair, the test playing the worker on the other. A frame that does not echo its request's nonce, or
that waits on the channel when a request goes out, is forged; memory files are sealed against shrinking; the
launchers start from a fixed environment, by absolute path."""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import time

import pytest

from evokernel.verifier import message_codec as codec
from evokernel.verifier.trusted import launcher
from evokernel.verifier.trusted.launcher import WorkerDied, WorkerHandle, sealed_memfd


class FakeZygote:
    def __init__(self):
        self.killed = []

    def kill(self, pid):
        self.killed.append(pid)
        return {"exited": 0}


@pytest.fixture
def pair():
    """(handle, worker end, zygote): the handle has received the worker's hello."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    fds = [sealed_memfd(f"t-{k}") for k in ("data", "out", "err")]
    z = FakeZygote()
    handle = WorkerHandle(z, 1234, ours, *fds, nonce=99)
    worker = codec.WorkerChannel(theirs.detach(), nonce=99)
    worker.send({"op": "hello", "pid": 1234})
    assert handle.receive(time.monotonic() + 5)["op"] == "hello"
    yield handle, worker, z
    handle.close()
    worker.sock.close()


def _request(handle, worker, op="ping"):
    handle.send({"op": op})
    msg = worker.recv_request(codec.MAX_MESSAGE)
    assert msg["op"] == op and msg["nonce"] == handle.nonce
    return msg


def test_replies_echo_the_nonce_of_their_request(pair):
    handle, worker, _ = pair
    nonces = set()
    for _ in range(3):
        _request(handle, worker)
        nonces.add(handle.nonce)
        worker.send({"ok": True})
        assert handle.receive(time.monotonic() + 5) == {"ok": True}
    assert len(nonces) == 3  # a fresh nonce per request


@pytest.mark.parametrize("frame", [{"ok": True}, {"ok": True, "nonce": 5}, {"ok": True, "nonce": "99"},
                                   {"op": "build", "kind": "cpp", "source": "x"}])
def test_a_frame_without_the_request_nonce_is_forged(pair, frame):
    handle, worker, _ = pair
    _request(handle, worker)
    worker.nonce = None  # a frame written past the worker's loop carries no (or a stale) nonce
    worker.send(frame)
    with pytest.raises(codec.ForgedFrame, match="nonce"):
        handle.receive(time.monotonic() + 5)


def test_the_previous_requests_nonce_is_forged(pair):
    handle, worker, _ = pair
    _request(handle, worker)
    stale = worker.nonce
    worker.send({"ok": True})
    handle.receive(time.monotonic() + 5)
    _request(handle, worker)
    worker.nonce = stale
    worker.send({"ok": True})
    with pytest.raises(codec.ForgedFrame):
        handle.receive(time.monotonic() + 5)


def test_a_second_reply_is_caught_at_the_next_request(pair):
    handle, worker, _ = pair
    _request(handle, worker)
    worker.send({"ok": True})
    worker.send({"ok": True})  # one request, two replies (both with the right nonce)
    assert handle.receive(time.monotonic() + 5) == {"ok": True}
    with pytest.raises(codec.ForgedFrame, match="waiting"):
        handle.send({"op": "ping"})


def test_bytes_waiting_before_the_first_request_are_forged(pair):
    handle, worker, _ = pair
    worker.sock.sendmsg([b"\x00"])  # not even a frame
    with pytest.raises(codec.ForgedFrame, match="waiting"):
        handle.send({"op": "load"})


def test_a_closed_channel_is_a_dead_worker(pair):
    handle, worker, z = pair
    worker.sock.close()
    with pytest.raises(WorkerDied):
        handle.send({"op": "ping"})
    assert z.killed == [1234]


def test_memory_files_are_sealed_against_shrinking():
    fd = sealed_memfd("t")
    try:
        os.ftruncate(fd, 1 << 16)  # growing is allowed (the parent grows the region)
        with pytest.raises(PermissionError):
            os.ftruncate(fd, 0)
        with pytest.raises(PermissionError):  # through /proc, as a worker could
            os.truncate(f"/proc/self/fd/{fd}", 0)
        with pytest.raises(PermissionError):
            os.open(f"/proc/self/fd/{fd}", os.O_RDWR | os.O_TRUNC)
        with pytest.raises(PermissionError):  # nobody may add seals that stop the parent growing or writing it
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE)
        seals = fcntl.fcntl(fd, fcntl.F_GET_SEALS)
        assert seals == fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_SEAL
        assert os.fstat(fd).st_size == 1 << 16
    finally:
        os.close(fd)


def test_the_region_is_never_shrunk_by_the_parent(pair):
    handle, _, _ = pair
    os.ftruncate(handle.data_fd, 8 << 20)  # a worker grew the file past what the parent asked for
    handle.ensure_capacity(1 << 20)  # no ftruncate to a smaller size (the seal would refuse it)
    assert handle.capacity == 1 << 20 and handle.mm is not None and len(handle.mm) == 1 << 20
    assert os.fstat(handle.data_fd).st_size == 8 << 20
    handle.ensure_capacity(16 << 20)
    assert os.fstat(handle.data_fd).st_size == 16 << 20


def test_launchers_start_from_a_fixed_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", f"{tmp_path}:" + os.environ["PATH"])
    monkeypatch.setenv("EVK_SECRET_TOKEN", "sk-x")
    env = launcher.launch_env()
    assert env == {"PATH": launcher.LAUNCH_PATH, "LANG": "C.UTF-8"}
    assert launcher.launch_cwd("bwrap", tmp_path) == "/"
    assert launcher.launch_cwd("rlimits", tmp_path) == str(tmp_path)  # no --chdir without bubblewrap
    argv = launcher.sandbox_argv(["true"], launcher.SandboxSpec(), mode="rlimits")
    assert os.path.isabs(argv[0]) and argv[0].endswith("prlimit")
    if launcher.shutil.which("bwrap"):
        argv = launcher.sandbox_argv(["true"], launcher.SandboxSpec(), mode="bwrap")
        assert any(os.path.isabs(a) and a.endswith("/bwrap") for a in argv)


def test_a_spec_may_bring_its_own_root():
    """SandboxSpec.root replaces the host's /usr (the build sandbox's toolchain-only root, build_sandbox.py)."""
    default = launcher.sandbox_argv(["true"], launcher.SandboxSpec(), mode="bwrap")
    assert "/usr" in [default[i + 1] for i, a in enumerate(default) if a == "--ro-bind"]
    root = ["--ro-bind", "/usr/include", "/usr/include", "--symlink", "usr/lib", "/lib"]
    argv = launcher.sandbox_argv(["true"], launcher.SandboxSpec(root=root), mode="bwrap")
    binds = [argv[i + 1] for i, a in enumerate(argv) if a == "--ro-bind"]
    assert "/usr" not in binds and "/usr/include" in binds
    assert argv[argv.index("--new-session") + 1:][:len(root)] == root


def test_worker_channel_sends_with_sendmsg_only(monkeypatch):
    """The worker's frames leave through sendmsg (the one call its seccomp filter allows on the socket)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ch = codec.WorkerChannel(theirs.detach(), nonce=7)
    calls = []
    monkeypatch.setattr(os, "write", lambda *a: calls.append("write") or errno.EPERM)
    ch.send({"op": "hello", "pid": 1})
    assert calls == []
    assert codec.recv(ours.fileno(), time.monotonic() + 5) == {"op": "hello", "pid": 1, "nonce": 7}
    ours.close()
    ch.sock.close()
