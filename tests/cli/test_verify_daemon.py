"""The warm verifier in the background: `evokernel verify` starts it on first use and reuses it; --no-daemon,
stale and foreign state files, idle stop, a code-version change, concurrent first calls; requests parsed
strictly. Every test has its own state directory and stops what it started."""
from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evokernel.cli import verify_daemon, verify_protocol
from evokernel.runtime.processes import pid_alive
from evokernel.verifier import message_codec as codec

ROOT = Path(__file__).resolve().parents[2]
RELU_TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "01_relu.py"
RELU = ROOT / "evokernel" / "examples" / "cpu" / "01_relu.py"
SMALL = ["--set", "batch_size=4", "--set", "dim=1024", "--no-timing"]


@pytest.fixture(scope="module")
def build_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("evk-daemon-cache")


@pytest.fixture
def env(tmp_path, build_cache):
    state = tmp_path / "state"
    e = {**os.environ, "EVOKERNEL_CACHE": str(build_cache), verify_daemon.STATE_ENV: str(state),
         "HF_HUB_OFFLINE": "1"}
    yield e
    if state.exists():
        for pid in verify_daemon.stop_all(state):
            assert not pid_alive(pid)


def cli(*args, env, wait=True):
    cmd = [sys.executable, "-m", "evokernel", "verify", *map(str, args)]
    if not wait:
        return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)


def verdict(p) -> dict:
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout)


def state_of(env) -> dict:
    files = list(Path(env[verify_daemon.STATE_ENV]).glob("v-*.json"))
    assert len(files) == 1, files
    return json.loads(files[0].read_text())


def test_the_first_call_starts_the_daemon_and_the_second_reuses_it(env):
    first = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    st = state_of(env)
    assert first["feasible"] and first["server"]["pid"] == st["pid"] and pid_alive(st["pid"])  # outlives the CLI
    second = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    assert second["server"]["pid"] == st["pid"] and second["server"]["served"] == first["server"]["served"] + 1
    assert second["server"]["version"] == st["version"] == first["server"]["version"]
    # only this user: a 0700 directory, a 0600 socket
    d = Path(env[verify_daemon.STATE_ENV])
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    assert stat.S_IMODE(Path(st["socket"]).stat().st_mode) == 0o600
    p = cli("--stop-server", env=env)
    assert p.returncode == 0 and "stopped" in p.stderr
    deadline = time.monotonic() + 30
    while pid_alive(st["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not pid_alive(st["pid"]) and not list(d.glob("v-*.json")) and not list(d.glob("v-*.sock"))


def test_no_daemon_verifies_in_process(env):
    v = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", "--no-daemon", env=env))
    assert v["feasible"] and "server" not in v
    assert not list(Path(env[verify_daemon.STATE_ENV]).glob("v-*.json"))


def test_a_stale_state_file_and_a_foreign_pid_are_replaced(env):
    d = Path(env[verify_daemon.STATE_ENV])
    d.mkdir(mode=0o700)
    files = _files_as_cli(env)  # the key covers the environment: computed as the CLI's process will
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    for stale_pid in (dead.pid, os.getpid()):  # a dead process; a live one that is not a daemon (a recycled pid)
        files.socket.unlink(missing_ok=True)
        s = socket.socket(socket.AF_UNIX)
        s.bind(str(files.socket))
        s.close()  # bound, never listening: connect() is refused
        files.state.write_text(json.dumps({"pid": stale_pid, "socket": str(files.socket),
                                           "version": verify_daemon.code_version(),
                                           "argv": [sys.executable, "-m", "evokernel.cli.verify_daemon"]}))
        v = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
        assert v["server"]["pid"] != stale_pid and state_of(env)["pid"] == v["server"]["pid"]
        assert pid_alive(os.getpid())  # the foreign process was left alone
        assert verify_daemon.stop_all(d) == [v["server"]["pid"]]


def test_garbage_in_the_state_file_is_replaced(env):
    d = Path(env[verify_daemon.STATE_ENV])
    d.mkdir(mode=0o755)  # too open: closed to 0700 before use
    files = _files_as_cli(env)
    files.state.write_text("{not json")
    v = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    assert v["server"]["pid"] == state_of(env)["pid"]
    assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_the_daemon_stops_when_idle(env):
    env = {**env, verify_daemon.IDLE_ENV: "2"}
    v = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    pid = v["server"]["pid"]
    deadline = time.monotonic() + 60
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not pid_alive(pid)
    assert not list(Path(env[verify_daemon.STATE_ENV]).glob("v-*.json"))
    assert not list(Path(env[verify_daemon.STATE_ENV]).glob("v-*.sock"))


def test_another_code_version_is_never_served(env):
    first = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    old = first["server"]["pid"]
    st = state_of(env)
    # the daemon itself refuses a request of another version
    req = {"op": "verify", "task_path": str(RELU_TASK), "candidate": RELU.read_text(), "backend": "cpu",
           "threads": 1, "timing": False, "overrides": {"batch_size": 4, "dim": 1024}, "version": "not-this-one"}
    reply = _ask(Path(st["socket"]), req)
    assert reply["ok"] is False and "version" in reply["incompatible"]
    # a state file that records another version (the code changed since it started): the client stops the old
    # daemon and starts one of its own version
    files = _files_as_cli(env)
    files.state.write_text(json.dumps({**st, "version": "older"}))
    second = verdict(cli(RELU_TASK, RELU, *SMALL, "--json", env=env))
    assert second["server"]["pid"] != old and not pid_alive(old)
    assert second["server"]["version"] == st["version"]


def test_two_concurrent_first_calls_start_one_daemon(env):
    procs = [cli(RELU_TASK, RELU, *SMALL, "--json", env=env, wait=False) for _ in range(2)]
    outs = []
    for p in procs:
        out, errs = p.communicate(timeout=600)
        assert p.returncode == 0, errs[-3000:]
        outs.append(json.loads(out))
    assert outs[0]["server"]["pid"] == outs[1]["server"]["pid"] == state_of(env)["pid"]
    mine = [pid for pid in _daemon_pids() if _env_of(pid).get(verify_daemon.STATE_ENV) == env[verify_daemon.STATE_ENV]]
    assert mine == [outs[0]["server"]["pid"]]


def test_the_client_path_does_not_import_torch():
    code = ("import sys, evokernel.cli, evokernel.cli.verify_daemon as d\nd.code_version()\n"
            "assert 'torch' not in sys.modules, 'torch imported'\nprint('ok')")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.stdout.strip() == "ok", p.stderr


# --- requests are parsed strictly ------------------------------------------------------------------
GOOD = {"op": "verify", "task_path": "/t/task.py", "candidate": "x = 1", "backend": "cpu", "threads": 1}


def test_a_well_formed_request_gets_its_defaults():
    req = verify_protocol.parse(GOOD)
    assert req["trials"] == 4 and req["timing"] is True and req["overrides"] == {} and req["seed"] is None


@pytest.mark.parametrize("bad, why", [
    ([], "JSON object"),
    ({"op": "shell"}, "unknown request"),
    ({"op": "ping", "x": 1}, "no fields"),
    ({**GOOD, "extra": 1}, "unknown field"),
    ({k: v for k, v in GOOD.items() if k != "candidate"}, "missing field 'candidate'"),
    ({**GOOD, "threads": True}, "threads"),
    ({**GOOD, "threads": 0}, "threads"),
    ({**GOOD, "trials": "4"}, "trials"),
    ({**GOOD, "timing": 1}, "timing"),
    ({**GOOD, "timeout": float("nan")}, "timeout"),
    ({**GOOD, "timeout": -1}, "timeout"),
    ({**GOOD, "seed": -5}, "seed"),
    ({**GOOD, "task_path": "relative.py"}, "absolute"),
    ({**GOOD, "task_path": "/a\x00b"}, "NUL"),
    ({**GOOD, "overrides": {"a b": 1}}, "identifier"),
    ({**GOOD, "overrides": {"n": {"x": 1}}}, "size constant"),
    ({**GOOD, "overrides": []}, "overrides"),
    ({**GOOD, "version": 3}, "version"),
])
def test_malformed_requests_are_refused(bad, why):
    with pytest.raises(verify_protocol.RequestError, match=why):
        verify_protocol.parse(bad)


# --- helpers ------------------------------------------------------------------------------------------
def _files_as_cli(env) -> verify_daemon.Files:
    """The files the CLI will use under ``env`` (the key covers the EVOKERNEL_* environment)."""
    code = ("import json, sys, evokernel.cli.verify_daemon as d\nf = d.Files('cpu', 1)\n"
            "print(json.dumps([str(f.state), str(f.socket)]))")
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    state, sock = json.loads(p.stdout)
    files = verify_daemon.Files.__new__(verify_daemon.Files)
    files.dir, files.state, files.socket = Path(state).parent, Path(state), Path(sock)
    files.lock, files.log = Path(state).with_suffix(".lock"), Path(state).with_suffix(".log")
    return files


def _ask(sock: Path, req: dict) -> dict:
    s = socket.socket(socket.AF_UNIX)
    s.connect(str(sock))
    try:
        codec.send(s.fileno(), req)
        return codec.recv(s.fileno(), time.monotonic() + 300, max_message=1 << 26)
    finally:
        s.close()


def _daemon_pids() -> list[int]:
    out = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                if b"evokernel.cli.verify_daemon" in (p / "cmdline").read_bytes() and pid_alive(int(p.name)):
                    out.append(int(p.name))
            except OSError:
                pass
    return out


def _env_of(pid: int) -> dict:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    return dict(kv.decode(errors="replace").split("=", 1) for kv in raw.split(b"\0") if b"=" in kv)
