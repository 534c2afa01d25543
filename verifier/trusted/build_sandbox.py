"""The build sandbox: what a native build sees, and where (trusted side).

A build runs candidate-controlled text through the preprocessor, and ``__has_include("path")`` answers whether
a path exists in the sandbox -- one bit per probe, and macro pasting spells any path (red-team
rt4_has_include_oracle). So the rule is positive: the build sandbox shows **only neutral paths**, none of which
depends on where the checkout, the virtualenv, the Python installation, ``$HOME`` or the build cache live:

* the toolchain at its system paths (``/usr`` and the merged-``/usr`` links, the loader's ``/etc`` files);
* the build's own folder at ``/build`` (the only writable place besides a private ``/tmp``);
* what a ``load_inline`` build compiles and links against, read-only, at fixed places under ``/opt/evk``:
  torch's headers (``/opt/evk/torch/include``), its libraries (``/opt/evk/torch/lib``), the Python headers
  (``/opt/evk/python/include``, for the verifier's binding unit) and the verifier's own ``torch/extension.h``
  (``/opt/evk/inline_include``); an ascend-sim build sees the emulator's headers and runtime source instead
  (``/opt/evk/ascend``, `BuildSandbox` ``mounts``: verifier/backends/ascend_sim/build.py);
* no ``/proc`` (its mount table would name the host sources of these mounts), no Python installation, no
  site-packages, no evokernel package: the build's seccomp filter is compiled by the parent and loaded by
  bubblewrap (``--seccomp``), so nothing of Python is needed inside.

Commands are composed on the host with host paths (the same commands run unsandboxed for a user's own
``load_cpp``); `BuildView.argv` rewrites every host folder of the mount table to its path inside. The binary
judge reads the compiler's output in the same terms and maps what it names back (`BuildView.host`), so its
system roots and include directories stay the host's. Every flag, ``-I``/``-isystem``/``-L`` and every path in
the object (``__FILE__`` of a header, debug information) therefore names ``/build`` or ``/opt/evk``; the built
library carries no rpath (the worker's loader finds libtorch, already loaded, by its soname).

Without bubblewrap (the rlimits fallback) nothing can be hidden: the view is the host's.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evokernel.verifier.trusted import inline_binding
from evokernel.verifier.trusted.launcher import Limits, SandboxSpec, run_sandboxed, sandbox_mode

WORK = "/build"
TORCH_INCLUDE = "/opt/evk/torch/include"
TORCH_LIB = "/opt/evk/torch/lib"
PYTHON_INCLUDE = "/opt/evk/python/include"
INLINE_INCLUDE = "/opt/evk/inline_include"
# part of every build's cache key: a library built under another layout names other paths
LAYOUT = "neutral-1"


@dataclass(frozen=True)
class BuildView:
    """Host folders and where a build sees them (``mounts``: (host, inside), the work folder first)."""
    mounts: tuple[tuple[str, str], ...] = ()

    def _sub(self, text: str, pairs: list[tuple[str, str]]) -> str:
        for a, b in sorted(pairs, key=lambda p: -len(p[0])):
            text = re.sub(re.escape(a) + r"(?=/|$|[\s'\"=:;,)])", lambda _m, b=b: b, text)
        return text

    def inside(self, text: str) -> str:
        """``text`` (a path, a flag, a shell command) with every mounted host folder named as the build sees it."""
        return self._sub(text, list(self.mounts))

    def argv(self, argv: list[str]) -> list[str]:
        return [self.inside(a) for a in argv]

    def host(self, path: str) -> str:
        """A path the build named, as the host's (a path under no mount is returned unchanged)."""
        for host, inside in sorted(self.mounts, key=lambda m: -len(m[1])):
            if path == inside or path.startswith(inside.rstrip("/") + "/"):
                return host + path[len(inside):]
        return path


HOST_VIEW = BuildView()


def view_of(runner: object, work: Path) -> BuildView:
    """The view of a build runner (`BuildSandbox`); a plain runner (unsandboxed) sees host paths."""
    view = getattr(runner, "view", None)
    return view(work) if callable(view) else HOST_VIEW


def _outermost(dirs: list[str]) -> list[str]:
    out: list[str] = []
    for d in sorted({str(Path(d)) for d in dirs}, key=len):
        if not any(d == o or d.startswith(o + "/") for o in out):
            out.append(d)
    return out


def neutral_mounts() -> list[tuple[str, str]]:
    """(host folder, neutral path) of what builds compile and link against (the work folder excluded)."""
    pairs: list[tuple[str, str]] = []
    for i, d in enumerate(_outermost(inline_binding.torch_include_dirs())):
        pairs.append((d, TORCH_INCLUDE + (str(i) if i else "")))
    for i, d in enumerate(_outermost([str(Path(p).resolve()) for p in inline_binding.torch_library_dirs()])):
        pairs.append((d, TORCH_LIB + (str(i) if i else "")))
    pairs.append((str(Path(inline_binding.python_include_dir()).resolve()), PYTHON_INCLUDE))
    pairs.append((str(inline_binding.INCLUDE), INLINE_INCLUDE))
    return [(h, n) for h, n in pairs if Path(h).is_dir()]


class BuildSandbox:
    """A build runner (native_build.Runner) whose sandbox shows only neutral paths (see the module docstring).

    ``limits(timeout)``: the resource limits of one command; ``readonly``: extra host folders at their own
    paths (a backend that needs them says so; neither the cpu nor the ascend-sim backend does); ``mounts``:
    (host folder or file, neutral path) of what the builds read besides the work folder, read-only (default:
    `neutral_mounts`, what cpu builds compile against; ascend-sim builds see the emulator's sources instead)."""

    def __init__(self, limits: Callable[[float], Limits], threads: int = 1, readonly: tuple[Path, ...] = (),
                 name: str = "build", mounts: Callable[[], list[tuple[str, str]]] = neutral_mounts):
        self.limits, self.threads, self.readonly, self.name = limits, threads, readonly, name
        self.mounts = mounts

    def view(self, work: Path) -> BuildView:
        if sandbox_mode() != "bwrap":
            return HOST_VIEW
        return BuildView(((str(work), WORK), *self.mounts()))

    def __call__(self, argv: list[str], cwd: Path, timeout: float, writable: Path) -> tuple[int | None, str]:
        view = self.view(writable)
        if view is HOST_VIEW:  # the rlimits fallback: nothing is hidden
            spec = SandboxSpec(threads=self.threads, writable=[writable], readonly=list(self.readonly),
                               limits=self.limits(timeout), cwd=cwd, seccomp="build", name=self.name)
            return run_sandboxed(argv, spec, timeout)
        mounts = [(Path(h), n, h == str(writable)) for h, n in view.mounts]
        spec = SandboxSpec(threads=self.threads, readonly=list(self.readonly), limits=self.limits(timeout),
                           cwd=Path(view.inside(str(cwd))), seccomp="build", name=self.name, mounts=mounts,
                           host_python=False, proc=False)
        return run_sandboxed(view.argv(argv), spec, timeout, mode="bwrap")
