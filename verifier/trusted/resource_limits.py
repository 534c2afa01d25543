"""Resource limits of everything the verifier starts: builds, candidate and reference workers, device
processes. One place for the numbers, and for the one limit that needs more than an rlimit here: the
number of tasks (processes and threads).

| limit | builds | candidate workers | how |
|---|---|---|---|
| address space | `BUILD_AS_MB` (a `load_inline` compile peaks at 1.5 GB RSS; a template-recursion bomb grows to 7 GB) | the warm interpreter + `VerifyConfig.memory_mb` | RLIMIT_AS |
| CPU seconds | the build's wall deadline x2 | `VerifyConfig.cpu_s` | RLIMIT_CPU |
| file size | `BUILD_FILE_MB` (a library, an assembly listing) | 64 MiB (stdout/stderr memory files too) | RLIMIT_FSIZE |
| open files | 1024 | 256 | RLIMIT_NOFILE |
| private /tmp | `BUILD_TMP_MB` | `CANDIDATE_TMP_MB` | bwrap `--size` of the tmpfs |
| tasks | `BUILD_TASKS` | `WORKER_TASKS` + 4 per thread, per worker; the sandbox as a whole `SANDBOX_TASKS` | see below |

**Tasks** (measured on this machine kind): as root, RLIMIT_NPROC is not enforced, not even inside
bubblewrap's user namespace (bwrap maps root to root, and the kernel exempts root's processes: 500 threads
under `prlimit --nproc=50`); a pids cgroup is (v1 here, `pids.max=30` stopped a thread bomb at 27 threads).
As an unprivileged user RLIMIT_NPROC is enforced, with and without bwrap (47 of 50). So `TaskCap` picks:

* ``cgroup`` -- root with a writable pids controller (cgroup v1, or v2 with ``pids`` delegated): one cgroup
  per sandbox (``evokernel-<pid>/<name>``, its ``pids.max``), the sandbox started inside it by a one-line
  shell that moves itself in before it execs the launcher (no child can escape the race), a child cgroup per
  candidate worker that the parent moves the worker into right after it says hello (before it is sent any
  candidate code), ``pids.events`` telling whether the limit was hit, the cgroups removed afterwards;
* ``rlimit`` -- not root: RLIMIT_NPROC (counted per user inside the sandbox's user namespace);
* ``none`` -- root without a writable pids controller: no task cap; every verdict says so
  (``details["limits"]``).
"""
from __future__ import annotations

import functools
import itertools
import os
import time
from dataclasses import dataclass
from pathlib import Path

from evokernel.runtime.processes import pid_alive

BUILD_AS_MB = 3 * 1024
BUILD_FILE_MB = 128
BUILD_TMP_MB = 1024
BUILD_TASKS = 64
CANDIDATE_TMP_MB = 256
WORKER_TASKS = 32  # per worker, plus 4 per timed thread (OpenMP, torch's own threads)
SANDBOX_TASKS = 256  # a whole zygote sandbox (the zygote and its workers)

_counter = itertools.count()


def worker_tasks(threads: int) -> int:
    return WORKER_TASKS + 4 * threads


@dataclass
class Group:
    """One pids cgroup (``path`` None: the task cap is an rlimit, or there is none)."""

    path: Path | None
    limit: int

    def hit(self) -> bool:
        """Whether a fork or thread creation in this group was refused because of the limit."""
        if self.path is None:
            return False
        try:
            for line in (self.path / "pids.events").read_text().splitlines():
                key, _, count = line.partition(" ")
                if key == "max" and int(count) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def add(self, pid: int) -> None:
        if self.path is not None:
            (self.path / "cgroup.procs").write_text(str(pid))

    def child(self, name: str, limit: int) -> "Group":
        if self.path is None:
            return Group(None, limit)
        path = self.path / f"{name}-{next(_counter)}"
        path.mkdir()
        (path / "pids.max").write_text(str(limit))
        return Group(path, limit)

    def close(self, wait: bool = True) -> bool:
        """Remove the cgroup once its processes are gone (``wait``: briefly waits for exiting ones);
        whether it is gone."""
        if self.path is None or not self.path.exists():
            return True
        for _ in range(50 if wait else 1):
            try:
                for sub in sorted(self.path.iterdir()):
                    if sub.is_dir():
                        Group(sub, 0).close(wait)
                self.path.rmdir()
                return True
            except OSError:
                if wait:
                    time.sleep(0.02)
        return False


class TaskCap:
    """How the number of tasks of a sandbox is capped on this machine (see the module docstring)."""

    def __init__(self) -> None:
        self.root: Path | None = None
        self.mode = "rlimit" if os.geteuid() != 0 else "none"
        if os.geteuid() == 0:
            base = _pids_controller()
            if base is not None:
                try:
                    # a process killed with SIGKILL never ran its atexit: its cgroups stay, and a later
                    # process with the same pid found its own names taken (FileExistsError in a verdict)
                    sweep_stale(base)
                    root = base / f"evokernel-{os.getpid()}"
                    Group(root, 0).close(wait=False)  # an earlier process's, with this pid: nothing of ours yet
                    root.mkdir(exist_ok=True)
                    self.root, self.mode = root, "cgroup"
                except OSError:
                    pass

    def describe(self) -> str:
        # which limit holds, never where (the cgroup's host path names the verifier's pid: verdicts carry this)
        return {"cgroup": "pids cgroup", "rlimit": "RLIMIT_NPROC",
                "none": "not capped (root without a writable pids cgroup)"}[self.mode]

    def group(self, name: str, limit: int) -> Group:
        if self.mode != "cgroup" or self.root is None:
            return Group(None, limit)
        while True:
            path = self.root / f"{name}-{next(_counter)}"
            try:
                path.mkdir()
                break
            except FileExistsError:  # left by an earlier process with this pid whose group is still busy
                continue
        (path / "pids.max").write_text(str(limit))
        return Group(path, limit)

    def wrap(self, argv: list[str], group: Group) -> list[str]:
        """``argv`` started inside ``group`` (a shell that joins the group, then execs the command)."""
        if group.path is None:
            return argv
        return ["/bin/sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(group.path), *argv]

    def nproc(self, limit: int) -> list[str]:
        """prlimit options for the task cap (the rlimit mode only)."""
        return [f"--nproc={limit}"] if self.mode == "rlimit" else []

    def close(self) -> None:
        if self.root is not None:
            Group(self.root, 0).close()


def sweep_stale(base: Path) -> int:
    """Remove the ``evokernel-<pid>`` cgroups of processes that are gone, where no process is left in them;
    how many were removed."""
    removed = 0
    for d in base.glob("evokernel-*"):
        pid = d.name.split("-", 1)[1]
        if d.is_dir() and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            removed += Group(d, 0).close(wait=False)
    return removed


def _pids_controller() -> Path | None:
    v1 = Path("/sys/fs/cgroup/pids")
    if (v1 / "cgroup.procs").exists() and os.access(v1, os.W_OK):
        return v1
    v2 = Path("/sys/fs/cgroup")
    try:
        if "pids" in (v2 / "cgroup.subtree_control").read_text().split() and os.access(v2, os.W_OK):
            return v2
    except OSError:
        pass
    return None


@functools.lru_cache(maxsize=None)
def task_cap() -> TaskCap:
    import atexit

    cap = TaskCap()
    atexit.register(cap.close)
    return cap

