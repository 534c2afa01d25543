"""The build sandbox: what a native build sees, and where (trusted side).

A build runs candidate-controlled text through the preprocessor, and ``__has_include("path")`` answers whether
a path exists in the sandbox -- one bit per probe, and macro pasting spells any path (red-team
rt4_has_include_oracle). So the rule is positive: the build sandbox shows **only neutral paths**, none of which
depends on where the checkout, the virtualenv, the Python installation, ``$HOME`` or the build cache live:

* the toolchain at its system paths, and only it (`toolchain_root`, derived from the compiler at start-up): the
  programs a build runs (the compiler driver and what it execs -- cc1plus, cc1, collect2, as, ld, lto-wrapper --
  and sh, nm, objdump, c++filt, cut, sed), the libraries they load (``ldd``), GCC's own folder (its headers,
  crt files, libgcc, the LTO plugin), the compiler's system include folders (``g++ -E -v``, nothing under
  ``/usr/local``), the files a link reads (traced once with ``ld -t``) and the merged-``/usr`` links. Not the
  loader's cache ``/etc/ld.so.cache``: it lists every library folder the host configures (``/usr/local/cuda-*``
  here), and an ``#include`` of it quoted its bytes in a compile error (red-team rt6_ld_so_cache_in_compile_error);
  the loader finds the toolchain's libraries in its built-in system folders (``ld.so --help``) without it.
  `toolchain_root` checks that every library it adds is in one of those folders; on a host where one is not (a
  toolchain whose libraries only the cache locates), the cache is kept in the root as before. Every other host file -- the rest of ``/usr`` (``/usr/lib/os-release``,
  ``/usr/share``, ``/usr/local`` with its package managers' configuration) and ``/etc`` -- is absent: an
  ``#include`` of it fails as "file not found", so a compile error cannot quote it (red-team
  rt5_usr_file_in_compiler_error printed os-release's text through a template argument);
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

import functools
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from evokernel.verifier.trusted import inline_binding
from evokernel.verifier.trusted.launcher import LAUNCH_PATH, Limits, SandboxSpec, run_sandboxed, sandbox_mode

WORK = "/build"
TORCH_INCLUDE = "/opt/evk/torch/include"
TORCH_LIB = "/opt/evk/torch/lib"
PYTHON_INCLUDE = "/opt/evk/python/include"
INLINE_INCLUDE = "/opt/evk/inline_include"
# part of every build's cache key: a library built under another layout names other paths (or embedded a host file
# the toolchain-only root no longer shows)
LAYOUT = "neutral-2"


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


# --- the toolchain's root ------------------------------------------------------------------------------------

# what build commands run by name (native_build's compile/link commands, binary_facts' OBJECT_SCRIPT, /bin/sh)
TOOLS = ("sh", "g++", "gcc", "nm", "objdump", "c++filt", "cut", "sed",
         "grep", "cat", "awk", "objcopy")  # the ascend-sim unit script (ascend_sim/build.py) also runs these
# what the compiler driver execs (``g++ -print-prog-name``) or loads (the LTO plugin ld is always handed)
DRIVER_PROGRAMS = ("cc1plus", "cc1", "collect2", "as", "ld", "lto-wrapper", "liblto_plugin.so")
# folders that are never part of the toolchain's root, whatever the compiler reports
NEVER = ("/usr/local", "/usr/share", "/etc", "/home", "/root", "/opt", "/tmp", "/var", "/proc")
# where the root's programs are looked up: the build's PATH without what is never in the root (/usr/local/bin)
SYSTEM_PATH = ":".join(d for d in LAUNCH_PATH.split(":") if not any(d == n or d.startswith(n + "/") for n in NEVER))
_TOP_LINKS = ("/bin", "/lib", "/lib64", "/lib32", "/libx32", "/sbin")
LOADER_CACHE = "/etc/ld.so.cache"  # in the root only where a toolchain library is outside the loader's system folders
_TRIAL = 'extern "C" int evk_f(int x) { return x + 1; }\nint main() { return evk_f(-1); }\n'


@dataclass(frozen=True)
class Root:
    """The host files a build sees, at their own paths: whole folders, single files, symlinks (target, path)."""
    dirs: tuple[str, ...]
    files: tuple[str, ...]
    links: tuple[tuple[str, str], ...]

    def args(self) -> list[str]:
        """bubblewrap's arguments for this root (top-level links first, then folders and files by depth)."""
        cmd: list[str] = []
        for target, path in self.links:
            if os.path.dirname(path) == "/":
                cmd += ["--symlink", target, path]
        for path in sorted((*self.dirs, *self.files), key=lambda p: (p.count("/"), p)):
            cmd += ["--ro-bind", path, path]
        for target, path in self.links:
            if os.path.dirname(path) != "/":
                cmd += ["--symlink", target, path]
        return cmd


def _norm(path: str) -> str:
    """``path`` with its folder's symlinks and dot-dots resolved (its last component kept as named)."""
    return os.path.join(os.path.realpath(os.path.dirname(path) or "/"), os.path.basename(path))


def _chain(path: str) -> tuple[list[tuple[str, str]], str]:
    """(the symlinks from ``path`` to its file, as (target, link)), the file."""
    links: list[tuple[str, str]] = []
    p = _norm(path)
    for _ in range(40):
        if not os.path.islink(p):
            break
        target = os.readlink(p)
        links.append((target, p))
        p = _norm(os.path.join(os.path.dirname(p), target))
    return links, p


def _out(argv: list[str], stdin: str | None = None, cwd: str | None = None) -> str:
    """The output of a toolchain program (by its system path: the caller's PATH may hold shims of the same name)."""
    argv = [shutil.which(argv[0], path=SYSTEM_PATH) or argv[0], *argv[1:]]
    try:
        p = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=120, cwd=cwd)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return p.stdout + p.stderr


def _loaded_libraries(program: str) -> list[str]:
    """The shared libraries (and the loader) ``program`` loads, by ``ldd``."""
    found = []
    for line in _out(["ldd", program]).splitlines():
        m = re.search(r"(?:=>\s*)?(/\S+)\s+\(0x", line)
        if m:
            found.append(m.group(1))
    return found


def _system_search_dirs(loader: str) -> list[str]:
    """The folders ``loader`` (the dynamic loader, ``ld.so``) searches without its cache, by ``ld.so --help``."""
    return [os.path.realpath(m.group(1)) for m in re.finditer(r"^\s*(/\S+) \(system search path\)$",
                                                              _out([loader, "--help"]), re.M)]


def _include_dirs(driver: str, lang: str) -> list[str]:
    dirs, on = [], False
    for line in _out([driver, f"-x{lang}", "-E", "-v", "-"], stdin="").splitlines():
        if line.startswith("#include <...> search starts here"):
            on = True
        elif line.startswith("End of search list"):
            break
        elif on and line.startswith(" "):
            dirs.append(os.path.realpath(line.strip()))
    return dirs


def _link_inputs() -> list[str]:
    """Every file a link of a shared OpenMP library or of a program reads (``ld -t``: crt files, libstdc++, libm,
    libc's linker script and what it names, libgomp, libgcc), from two trial links on the host."""
    with tempfile.TemporaryDirectory(prefix="evk-trial-") as d:
        Path(d, "t.cpp").write_text(_TRIAL)
        out = _out(["g++", "-shared", "-fPIC", "-fopenmp", "-O2", "t.cpp", "-o", "t.so", "-Wl,--no-undefined",
                    "-lm", "-Wl,-t"], cwd=d)
        out += _out(["g++", "-fopenmp", "t.cpp", "-o", "t", "-lm", "-Wl,-t"], cwd=d)
    return [line.strip() for line in out.splitlines() if line.startswith("/") and not line.startswith(d)]


def _under(path: str, roots: tuple[str, ...]) -> bool:
    return any(path == r or path.startswith(r + "/") for r in roots)


@functools.lru_cache(maxsize=None)
def toolchain_root() -> Root:
    """The build sandbox's root, derived from the toolchain found on this machine (module docstring)."""
    dirs: set[str] = set()
    files: set[str] = set()
    links: dict[str, str] = {}  # path -> target

    def add_file(path: str) -> None:
        chain, real = _chain(path)
        if _under(real, NEVER) or not os.path.isfile(real):
            return
        if any(_under(link, NEVER) for _, link in chain):
            # a chain through a folder never shown (/usr/bin/awk -> /etc/alternatives/awk -> /usr/bin/mawk): the
            # first link points at the file itself
            links[chain[0][1]] = real
        else:
            for target, link in chain:
                links[link] = target
        files.add(real)

    for top in _TOP_LINKS:
        if os.path.islink(top):
            links[top] = os.readlink(top)
    programs = [p for name in TOOLS if (p := shutil.which(name, path=SYSTEM_PATH))]
    gcc_dir = os.path.dirname(os.path.realpath(_out(["g++", "-print-libgcc-file-name"]).strip() or "/"))
    for name in DRIVER_PROGRAMS:
        p = _out(["g++", f"-print-prog-name={name}"]).strip()
        p = p if p.startswith("/") else shutil.which(p, path=SYSTEM_PATH) or ""
        if p:
            programs.append(p)
    # GCC's folder is libgcc's, named after its version (…/gcc/x86_64-linux-gnu/12): taken whole
    if os.path.basename(gcc_dir) == _out(["g++", "-dumpversion"]).strip() and not _under(gcc_dir, NEVER):
        dirs.add(gcc_dir)
        for entry in os.scandir(gcc_dir):  # libstdc++.so, libgomp.so ...: links to the system's library folder
            if entry.is_symlink():
                add_file(entry.path)
    libraries: set[str] = set()
    for p in programs:
        add_file(p)
        for lib in _loaded_libraries(_chain(p)[1]):
            add_file(lib)
            libraries.add(lib)
    for path in _link_inputs():
        add_file(path)
    for d in _include_dirs("g++", "c++") + _include_dirs("gcc", "c"):
        if os.path.isdir(d) and not _under(d, NEVER):
            dirs.add(d)
    loaders = [lib for lib in libraries if os.path.basename(lib).startswith("ld-linux")]
    system = _system_search_dirs(loaders[0]) if loaders else []
    if any(os.path.dirname(os.path.realpath(lib)) not in system for lib in libraries if lib not in loaders):
        files.add(LOADER_CACHE)  # the module docstring: only the cache finds one of them
    outer = _outermost(sorted(dirs))
    return Root(dirs=tuple(outer), files=tuple(sorted(f for f in files if not _under(f, tuple(outer)))),
                links=tuple(sorted((t, p) for p, t in links.items() if not _under(p, tuple(outer)))))


# The build's environment on top of launcher.base_env: the compiler's clock fixed, so __DATE__ / __TIME__ (errors
# anyway: -Werror=date-time, which no allowed flag switches off) could not make a build depend on the date.
BUILD_ENV = {"SOURCE_DATE_EPOCH": "0"}


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
                               limits=self.limits(timeout), cwd=cwd, seccomp="build", name=self.name,
                               env=dict(BUILD_ENV))
            return run_sandboxed(argv, spec, timeout)
        mounts = [(Path(h), n, h == str(writable)) for h, n in view.mounts]
        spec = SandboxSpec(threads=self.threads, readonly=list(self.readonly), limits=self.limits(timeout),
                           cwd=Path(view.inside(str(cwd))), seccomp="build", name=self.name, mounts=mounts,
                           host_python=False, proc=False, root=toolchain_root().args(), env=dict(BUILD_ENV))
        return run_sandboxed(view.argv(argv), spec, timeout, mode="bwrap")
