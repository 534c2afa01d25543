"""Resource limits and the sandbox's view of the host (verifier/trusted/resource_limits.py, launcher.py).

Each test is the attack on one limit: a thread bomb against the task cap, a /tmp filler against the
private tmpfs, a reader of host files against the minimal root."""
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evokernel.verifier.trusted import resource_limits
from evokernel.verifier.trusted.launcher import Limits, SandboxSpec, run_sandboxed

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")

THREAD_BOMB = textwrap.dedent("""
    import threading, time
    n = 0
    try:
        for _ in range(400):
            threading.Thread(target=time.sleep, args=(3,), daemon=True).start()
            n += 1
    except RuntimeError:
        pass
    print("started", n, flush=True)
""")


def _run_py(code: str, limits: Limits, mode: str = "bwrap", **kw) -> tuple[int | None, str]:
    return run_sandboxed([sys.executable, "-c", code], SandboxSpec(limits=limits, name="test", **kw),
                         timeout=60, mode=mode)


def _started(out: str) -> int:
    line = next(ln for ln in out.splitlines() if ln.startswith("started"))
    return int(line.split()[1])


@needs_bwrap
def test_thread_bomb_is_capped_and_reported():
    cap = resource_limits.task_cap()
    if cap.mode == "none":
        pytest.skip("root without a writable pids cgroup: no task cap here (every verdict says so)")
    rc, out = _run_py(THREAD_BOMB, Limits(tasks=40))
    assert _started(out) < 40, out
    if cap.mode == "cgroup":
        assert "exceeded its limit of 40 processes and threads" in out


def test_cgroups_are_removed_after_the_sandbox():
    cap = resource_limits.task_cap()
    if cap.mode != "cgroup":
        pytest.skip(f"task cap here: {cap.describe()}")
    before = {p.name for p in cap.root.iterdir() if p.is_dir()}
    _run_py("print('started 0')", Limits(tasks=40))
    after = {p.name for p in cap.root.iterdir() if p.is_dir()}
    assert after <= before


def test_cgroups_left_by_a_killed_process_are_swept_and_never_collide():
    """A process killed with SIGKILL never runs its atexit: its cgroups stayed (183 of them on this machine),
    and a later process given the same pid failed a verdict with FileExistsError on its first group."""
    cap = resource_limits.task_cap()
    if cap.mode != "cgroup":
        pytest.skip(f"task cap here: {cap.describe()}")
    base = cap.root.parent
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    stale = base / f"evokernel-{gone.pid}"
    (stale / "candidate-0").mkdir(parents=True, exist_ok=True)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        alive = base / f"evokernel-{live.pid}"
        alive.mkdir(exist_ok=True)  # a running process's cgroup is not touched
        assert resource_limits.sweep_stale(base) >= 1
        assert not stale.exists() and alive.exists()
    finally:
        live.kill()
        live.wait()
        alive.rmdir()
    # the names an earlier process with this pid left behind are skipped, not a crash
    taken = cap.root / f"test-{next(resource_limits._counter) + 1}"
    taken.mkdir()
    busy = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        (taken / "cgroup.procs").write_text(str(busy.pid))  # a group that cannot be removed
        group = cap.group("test", 40)
        assert group.path != taken and group.path.exists()
        group.close()
    finally:
        busy.kill()
        busy.wait()
        resource_limits.Group(taken, 0).close()


def test_unprivileged_users_are_capped_by_rlimit_nproc():
    """The non-root mechanism: prlimit --nproc holds for an unprivileged user (it does not for root)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root to switch to an unprivileged user (setpriv)")
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None:
        pytest.skip("no system python3 to run as nobody")
    r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "prlimit", "--nproc=30",
                        "--", python, "-c", THREAD_BOMB], capture_output=True, text=True, timeout=60, cwd="/")
    assert _started(r.stdout) < 30, r.stdout + r.stderr
    mode = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", python, "-c",
                           "import os; print(os.geteuid())"], capture_output=True, text=True, cwd="/")
    assert mode.stdout.strip() == "65534"


def test_task_cap_modes_are_described():
    cap = resource_limits.task_cap()
    assert cap.mode in {"cgroup", "rlimit", "none"}
    assert cap.describe()
    assert cap.nproc(10) == (["--nproc=10"] if cap.mode == "rlimit" else [])


@needs_bwrap
def test_private_tmp_is_size_capped():
    code = textwrap.dedent("""
        n = 0
        try:
            with open('/tmp/fill', 'wb') as f:
                for _ in range(64):
                    f.write(b'x' * (1 << 20)); f.flush(); n += 1
        except OSError as e:
            print('refused', e.errno)
        print('started', n)
    """)
    rc, out = _run_py(code, Limits(tmp_mb=16))
    assert "refused" in out and _started(out) <= 16, out


@needs_bwrap
def test_sandbox_root_shows_no_host_files(tmp_path):
    """The minimal root: the checkout, the home directory, the build cache and host /etc files are absent;
    only what the spec binds is there."""
    project = Path(__file__).resolve().parents[3]
    secret = Path.home() / f".evokernel-limits-secret-{os.getpid()}"
    secret.write_text("token")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "lib.so").write_text("x")
    shown = tmp_path / "shown"
    shown.mkdir()
    probes = [str(project / "pyproject.toml"), str(secret), str(cache / "lib.so"), "/etc/hostname",
              "/etc/passwd", "/etc/shadow", "/home", "/var", "/proc/1/environ", str(shown)]
    code = "import os\nfor p in %r:\n    print(p, os.path.exists(p) and os.access(p, os.R_OK))\n" % probes
    try:
        rc, out = _run_py(code, Limits(), readonly=[shown])
        # directories above a bound Python installation (/root for pyenv) exist, holding only that path
        _, listing = _run_py(f"import os; print(os.listdir({str(Path.home())!r}))", Limits())
    finally:
        secret.unlink()
    assert secret.name not in listing, listing
    seen = dict(line.rsplit(" ", 1) for line in out.splitlines() if line.startswith("/"))
    assert rc == 0, out
    assert seen[str(shown)] == "True"
    leaked = [p for p in probes[:-1] if seen.get(p) == "True" and p != "/proc/1/environ"]
    assert not leaked, out
    # /proc/1 is bubblewrap's init inside the sandbox; its environment is the launcher's minimal one
    env_code = "print(open('/proc/1/environ','rb').read().replace(b'\\0', b' ').decode())"
    os.environ["EVOKERNEL_TEST_SECRET"] = "sk-leak"
    try:
        rc, out = _run_py(env_code, Limits())
    finally:
        del os.environ["EVOKERNEL_TEST_SECRET"]
    assert "sk-leak" not in out


PROC1 = ("import os\n"
         "print('CWD ' + os.readlink('/proc/1/cwd'))\n"
         "print('ENV ' + open('/proc/1/environ', 'rb').read().replace(b'\\0', b' ').decode())\n")


@needs_bwrap
def test_proc1_shows_nothing_of_the_caller(monkeypatch, tmp_path):
    """bwrap's init (pid 1 inside the sandbox) keeps the environment and working directory it was started with:
    they are the launcher's fixed ones, not the caller's PATH (home and checkout folders) or its working
    directory (the checkout, also as PWD), for one-shot sandboxes (builds) and for the zygote's workers."""
    from evokernel.verifier.trusted.launcher import LAUNCH_PATH, Zygote

    project = Path(__file__).resolve().parents[3]
    marker = tmp_path / "evk-caller-path-marker"
    monkeypatch.chdir(project)
    monkeypatch.setenv("PATH", f"{marker}:" + os.environ["PATH"])
    rc, out = _run_py(PROC1, Limits(), cwd=tmp_path, writable=[tmp_path])  # a build: --chdir to its folder
    assert rc == 0, out
    z = Zygote(label="proc1").start()
    try:
        w = z.spawn("reference", 1024, 60)  # trusted role: a task module that reports what it sees
        src = PROC1.replace("print(", "report.append(") + ("class Model: pass\ndef get_inputs(): return []\n"
                                                            "def get_init_inputs(): return []\n")
        reply = w.call({"op": "load", "source": "report = []\n" + src + "raise RuntimeError(report)", "threads": 1},
                       60)
        w.close()
    finally:
        z.close()
    for seen in (out, reply["error"]):
        assert str(marker) not in seen and str(project) not in seen, seen
        assert f"PATH={LAUNCH_PATH}" in seen, seen
        cwd = seen.split("CWD ")[1].split()[0].strip("',")
        assert cwd in ("/", "/tmp", str(tmp_path)), seen  # bwrap's --chdir, never the caller's folder
