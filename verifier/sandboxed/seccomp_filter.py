"""Runs INSIDE the sandbox: the confinement a process applies to itself before untrusted code runs --
resource limits and seccomp filters.

* ``run`` (candidate workers): no networking, no other processes' memory or debugging, no new processes
  (threads stay allowed), no namespaces, mounts or kernel facilities, no signals to others, and no thread
  placement or priority changes: the worker pins itself to the timed CPUs before the filter is installed,
  so a candidate cannot take a second core (sched_setaffinity) or a higher priority.
* ``build`` (compilers, the tools of a build): the same minus the process-creation denials -- compilers
  fork and exec their passes -- so nothing a candidate's source can influence at build time runs without
  a filter (`seccomp_exec` installs it and execs the build command; filters survive exec).
"""
from __future__ import annotations

import errno
import resource

# --- resource limits ----------------------------------------------------------------------------


def _vm_size() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def apply_limits(memory_mb: int, cpu_s: int, fsize_mb: int = 64, nofile: int = 256) -> None:
    """Address space = what the worker already maps + ``memory_mb``; CPU seconds; file size; fds."""
    def cap(which: int, soft: int, hard: int | None = None) -> None:
        hard = soft if hard is None else hard
        cur_soft, cur_hard = resource.getrlimit(which)
        if cur_hard != resource.RLIM_INFINITY:
            soft, hard = min(soft, cur_hard), min(hard, cur_hard)
        resource.setrlimit(which, (soft, hard))

    cap(resource.RLIMIT_AS, _vm_size() + memory_mb * 1024 * 1024)
    cap(resource.RLIMIT_CPU, cpu_s, cpu_s + 5)  # SIGXCPU at the soft limit, SIGKILL at the hard one
    cap(resource.RLIMIT_FSIZE, fsize_mb * 1024 * 1024)
    cap(resource.RLIMIT_NOFILE, nofile)
    cap(resource.RLIMIT_CORE, 0)


# --- seccomp ------------------------------------------------------------------------------------

_DENY_ALWAYS = [
    # networking
    "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "sendmsg", "recvmsg",
    # other processes' memory and debugging
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_open", "pidfd_getfd",
    # namespaces, mounts, kernel facilities
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "bpf", "perf_event_open", "userfaultfd",
    "keyctl", "add_key", "request_key", "personality", "init_module", "finit_module", "delete_module",
    "kexec_load", "reboot", "swapon", "swapoff", "acct", "quotactl",
    # signalling other processes (a candidate may still raise signals on itself through tgkill)
    "kill",
]
# thread placement and priority belong to the verifier (both sides are timed alike)
_DENY_SCHEDULING = ["sched_setaffinity", "sched_setscheduler", "sched_setattr", "sched_setparam", "setpriority"]
# new processes (threads stay allowed; see clone below)
_DENY_PROCESSES = ["fork", "vfork", "execve", "execveat"]
CLONE_THREAD = 0x00010000


def install_seccomp(mode: str = "run") -> str:
    """Install the ``run`` or ``build`` filter (see the module docstring). Returns a short description."""
    try:
        import pyseccomp as sc
    except ImportError:  # the verifier records that seccomp was not available
        return "seccomp unavailable (pyseccomp not installed)"
    if mode not in ("run", "build"):
        raise ValueError(f"unknown seccomp mode {mode!r}")
    flt = sc.SyscallFilter(defaction=sc.ALLOW)
    deny = _DENY_ALWAYS + (_DENY_SCHEDULING + _DENY_PROCESSES if mode == "run" else [])
    for name in deny:
        try:
            flt.add_rule(sc.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError, OSError):
            pass  # syscall unknown on this architecture
    if mode == "run":
        # clone() without CLONE_THREAD makes a process; with it, a thread (OpenMP needs threads)
        flt.add_rule(sc.ERRNO(errno.EPERM), "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
        # clone3 passes flags in memory seccomp cannot read: ENOSYS makes glibc fall back to clone()
        flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    flt.load()
    return f"seccomp ({mode})"
