"""Keeping the timed sides of a measurement off each other's CPU (trusted side).

Candidate and reference are timed in turns on the same pinned CPUs. A candidate that leaves threads
spinning after its reply would slow the reference down (a 3.6x fake speedup, measured), and one that
replies early could finish its output while the reference is being timed. So while one side is
timed, every other side is *stopped*: SIGSTOP on its whole process (all threads), confirmed from
/proc before the clock starts, SIGCONT when its own turn comes. A stopped process cannot run, so
"the candidate was idle while the reference ran" holds by construction, not by inference.

Workers live in the sandbox's pid namespace; the parent finds their host pids through the NSpid
lines of /proc/<pid>/status (the last entry is the pid inside the namespace).
"""
from __future__ import annotations

import os
import signal
import time

_STOPPED = {"T", "t"}  # stopped, or traced-stopped


class IsolationError(RuntimeError):
    """A process could not be stopped or found (it died, or /proc is not readable)."""


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(c) for c in f.read().split()]
            except OSError:
                continue
    except OSError:
        pass
    return out


def descendants(root: int) -> list[int]:
    """Every process below ``root`` (breadth first)."""
    seen: list[int] = []
    frontier = [root]
    while frontier:
        nxt = []
        for p in frontier:
            for c in _children(p):
                if c not in seen:
                    seen.append(c)
                    nxt.append(c)
        frontier = nxt
    return seen


def ns_pids(pid: int) -> list[int]:
    """The NSpid line of a process: its pid in each nested pid namespace, outermost first."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def host_pid(sandbox_root: int, inner_pid: int, pid_namespace: bool) -> int:
    """The host pid of the process ``inner_pid`` of a sandbox whose outermost process is ``sandbox_root``
    (without a pid namespace the two are the same)."""
    if not pid_namespace:
        return inner_pid
    for p in descendants(sandbox_root):
        nsp = ns_pids(p)
        if len(nsp) >= 2 and nsp[-1] == inner_pid:
            return p
    raise IsolationError(f"no process with pid {inner_pid} inside the sandbox of process {sandbox_root}")


def _states(pid: int) -> list[str]:
    states = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue  # the thread ended
        states.append(stat[stat.rindex(")") + 2])  # the field after "(comm)"
    return states


def stop(pid: int, timeout: float = 2.0) -> None:
    """Stop every thread of ``pid`` and return once /proc shows them all stopped."""
    try:
        os.kill(pid, signal.SIGSTOP)
    except ProcessLookupError:
        raise IsolationError(f"process {pid} is gone") from None
    deadline = time.monotonic() + timeout
    delay = 2e-5
    while True:
        try:
            states = _states(pid)
        except OSError:
            raise IsolationError(f"process {pid} is gone") from None
        if states and all(s in _STOPPED or s in {"Z", "X"} for s in states):
            return
        if time.monotonic() > deadline:
            raise IsolationError(f"process {pid} did not stop within {timeout:.1f} s (threads: {''.join(states)})")
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)


def resume(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGCONT)
    except ProcessLookupError:
        pass  # a dead process: its next request reports it


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the whole process (all threads), from /proc/<pid>/stat."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
