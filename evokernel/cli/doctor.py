"""`evokernel doctor`: can this machine run a backend? One `Check` per requirement, never a crash.

    run_checks("cpu" | "ascend-sim" | "ascend" | "local", environ=None) -> [Check(name, status, detail, remedy)]

Which checks a backend gets is its registry row's ``doctor`` (verifier/backends/registry.py): names of the
groups in :data:`CHECKS`, in display order.

"local" is not a backend but the local model (`--model local:NAME`, docs/local-model.md): llama-cpp-python,
the registry models fetched and verified, the managed servers running and healthy.

status is "ok", "warn" (works, with less: e.g. the rlimits sandbox instead of bubblewrap, no msprof) or
"FAIL" (the backend cannot run; `remedy` says what to do in one line). The CLI (`evokernel doctor`) prints
them as a table and exits 1 when any check FAILs.

The ascend checks never import torch_npu in this process: without a loadable CANN `import torch_npu`
prints an ImportError about libhccl.so and calls sys.exit(). It is probed in a fresh interpreter
(EVOKERNEL_NPU_PYTHON, default this one) with the CANN environment, like the device runner.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import asdict, dataclass
from importlib.metadata import PackageNotFoundError, requires, version
from pathlib import Path
from typing import Callable

from evokernel.verifier.backends import registry

LOCAL = "local"  # not a backend: the local model's checks

OK, WARN, FAIL = "ok", "warn", "FAIL"
MIN_PYTHON = (3, 11)
SOC_ENV = "EVOKERNEL_ASCEND_SOC"
NPU_PYTHON_ENV = "EVOKERNEL_NPU_PYTHON"
NPU_SMI_TIMEOUT_S = 20.0
PROBE_TIMEOUT_S = 180.0  # a cold `import torch_npu` loads most of CANN's runtime
DEV = Path("/dev")       # tests point this elsewhere
_MARK = "EVOKERNEL_DOCTOR_PROBE="
_NO_PROCESS = -(10 ** 6)  # probe_torch_npu's exit code when the interpreter could not be started

# Run by EVOKERNEL_NPU_PYTHON with the CANN environment. A marker line after each stage: torch_npu may print
# to stdout, and on a machine without CANN it calls sys.exit() (exit code 0) instead of raising.
PROBE = f"""\
import json
out = {{}}
def emit():
    print({_MARK!r} + json.dumps(out), flush=True)
import torch
out["torch"] = str(torch.__version__)
emit()
import torch_npu
out["torch_npu"] = str(getattr(torch_npu, "__version__", "unknown"))
emit()
npu = getattr(torch_npu, "npu", None)
try:
    count = getattr(npu, "device_count", None)
    out["device_count"] = int(count()) if count is not None else None
except Exception as exc:
    out["device_count"], out["device_error"] = None, f"{{type(exc).__name__}}: {{exc}}"
try:
    name = getattr(npu, "get_device_name", None)
    out["device_name"] = str(name(0)) if name is not None and out.get("device_count") else None
except Exception as exc:
    out["device_name"], out["device_error"] = None, f"{{type(exc).__name__}}: {{exc}}"
emit()
"""


@dataclass
class Check:
    name: str
    status: str       # ok | warn | FAIL
    detail: str
    remedy: str = ""  # one line; always set for FAIL

    def to_dict(self) -> dict:
        return asdict(self)


def failed(checks: list[Check]) -> bool:
    return any(c.status == FAIL for c in checks)


# ---------------------------------------------------------------------------------------------------------
# checks of every backend
# ---------------------------------------------------------------------------------------------------------
def check_python() -> Check:
    v = sys.version_info
    text = f"{v.major}.{v.minor}.{v.micro} ({sys.executable})"
    if (v.major, v.minor) < MIN_PYTHON:
        return Check("python", FAIL, text, f"use Python >= {MIN_PYTHON[0]}.{MIN_PYTHON[1]} (pyproject requires-python)")
    return Check("python", OK, text)


def _pinned_torch() -> str | None:
    """The torch version evokernel's metadata pins (`torch==X`), if installed as a distribution."""
    try:
        for req in requires("evokernel") or []:
            m = re.match(r"^\s*torch\s*==\s*([\w.]+)\s*(;.*)?$", req)
            if m:
                return m.group(1)
    except Exception:
        pass
    return None


def _base_version(v: str) -> str:
    return v.split("+", 1)[0]


def _major_minor(v: str) -> tuple[str, ...]:
    return tuple(_base_version(v).split(".")[:2])


def check_torch() -> Check:
    try:
        import torch  # lazy: the check itself: a broken torch is a FAIL row
    except Exception as exc:  # noqa: BLE001 - a broken install raises more than ImportError
        return Check("torch", FAIL, f"import torch failed: {type(exc).__name__}: {exc}",
                     "pip install -e . (installs the pinned CPU torch)")
    version = str(torch.__version__)
    pinned = _pinned_torch()
    if pinned and _base_version(version) != pinned:
        return Check("torch", WARN, f"torch {version} (evokernel pins {pinned})",
                     f"pip install torch=={pinned} (the verifier is tested with it)")
    return Check("torch", OK, f"torch {version}" + (" (matches the pin)" if pinned else ""))


def check_bwrap(env: dict[str, str]) -> Check:
    path = shutil.which("bwrap", path=env.get("PATH"))
    forced = env.get("EVOKERNEL_SANDBOX")
    if forced == "rlimits":
        return Check("bubblewrap", WARN, "EVOKERNEL_SANDBOX=rlimits forces the rlimits sandbox"
                     + (f" (bwrap at {path})" if path else ""), "unset EVOKERNEL_SANDBOX to isolate candidates with bwrap")
    if path:
        # the verifier's namespaces (launcher.sandbox_argv): a bwrap that cannot create them stops every verify
        argv = [path, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/", "--dev", "/dev",
                "--proc", "/proc", "--tmpfs", "/tmp", "true"]
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=20, env=env)
            rc, text = out.returncode, out.stdout + out.stderr
        except subprocess.TimeoutExpired:
            rc, text = None, "timed out after 20 s"
        except OSError as exc:
            rc, text = -1, str(exc)
        if rc != 0:
            return Check("bubblewrap", FAIL, f"{path} is installed but cannot create the sandbox "
                         f"({_tail(text, 2) or f'exit {rc}'}): every verify would stop",
                         "allow unprivileged user namespaces (or run the container with --privileged), "
                         "or export EVOKERNEL_SANDBOX=rlimits (weaker isolation)")
        return Check("bubblewrap", OK, f"{path}: candidates run in the bwrap sandbox")
    return Check("bubblewrap", WARN, "bwrap not found: the verifier falls back to the rlimits sandbox "
                 "(no filesystem/network isolation)", "apt-get install bubblewrap")


def check_cxx(env: dict[str, str]) -> Check:
    path = shutil.which("g++", path=env.get("PATH"))
    if not path:
        return Check("g++", FAIL, "g++ not found on PATH (candidates and the emulator are built with it)",
                     "apt-get install g++")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30, env=env)
        first = (out.stdout.splitlines() or [""])[0].strip()
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Check("g++", FAIL, f"{path} --version failed: {exc}", "reinstall g++ (apt-get install --reinstall g++)")
    if out.returncode != 0:
        return Check("g++", FAIL, f"{path} --version exited {out.returncode}", "reinstall g++")
    return Check("g++", OK, f"{path}: {first}")


# ---------------------------------------------------------------------------------------------------------
# ascend-sim
# ---------------------------------------------------------------------------------------------------------
def check_emulator() -> Check:
    spec = importlib.util.find_spec("evokernel.verifier.backends.ascend_sim")
    locations = list(spec.submodule_search_locations or []) if spec else []
    if not locations:
        return Check("ascend-sim emulator", FAIL, "package evokernel.verifier.backends.ascend_sim not found",
                     "reinstall evokernel (pip install -e .)")
    root = Path(locations[0])
    missing = [p for p in (root / "include", root / "include" / "kernel_operator.h", root / "runtime.cpp")
               if not p.exists()]
    if missing:
        return Check("ascend-sim emulator", FAIL, "missing " + ", ".join(str(p) for p in missing),
                     "reinstall evokernel so its package data (emulator headers, runtime.cpp) is included")
    return Check("ascend-sim emulator", OK, f"sources at {root / 'include'}")


# ---------------------------------------------------------------------------------------------------------
# ascend (real NPU)
# ---------------------------------------------------------------------------------------------------------
_VERSION_LINE = re.compile(r"^\s*version\s*=\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def cann_version(home: Path) -> tuple[str, Path] | None:
    """The toolkit version from `version=` in version.cfg / *ascend_toolkit_install.info style files."""
    cands = [home / "version.cfg", home / "ascend_toolkit_install.info"]
    cands += sorted(home.glob("*/ascend_toolkit_install.info")) + sorted(home.glob("*/version.cfg"))
    cands += [home / "compiler" / "version.info", home / "runtime" / "version.info"]
    for p in cands:
        try:
            text = p.read_text(errors="replace")
        except OSError:
            continue
        m = _VERSION_LINE.search(text)
        if m:
            return m.group(1).strip().strip("\"'"), p
    return None


def check_cann_version(home: Path) -> Check:
    found = cann_version(home)
    if found is None:
        return Check("CANN version", WARN, f"unknown (no version= line in {home}/version.cfg or "
                     "*/ascend_toolkit_install.info)", "")
    version, path = found
    return Check("CANN version", OK, f"{version} ({path})")


def check_tool(name: str, env: dict[str, str], status_if_missing: str, why: str, remedy: str) -> Check:
    path = shutil.which(name, path=env.get("PATH"))
    if path:
        return Check(name, OK, path)
    return Check(name, status_if_missing, f"{name} not on the CANN environment's PATH: {why}", remedy)


# "Ascend910B2" / "910B3" / "310P3" / "910_9391"; a bare number (910) only with the Ascend prefix, so that a
# memory figure of 310 MB in the table is not taken for a chip
_CHIP = re.compile(r"\b(?:Ascend((?:910|310|710)(?:_\d+|[A-Z]\d*)?)|((?:910|310|710)(?:_\d+|[A-Z]\d*)))\b",
                   re.IGNORECASE)


def chips_in(text: str) -> list[str]:
    """Chip names in `npu-smi info` output (e.g. 910B2, 310P3), uppercase, in order, without duplicates."""
    seen: list[str] = []
    for m in _CHIP.finditer(text):
        name = (m.group(1) or m.group(2)).upper()
        if name not in seen:
            seen.append(name)
    return seen


def configured_soc(env: dict[str, str]) -> str:
    # lazy: CANN's helpers, only for --backend ascend
    from evokernel.verifier.backends.ascend.toolchain import DEFAULT_SOC
    return env.get(SOC_ENV) or DEFAULT_SOC


def check_soc(env: dict[str, str]) -> Check:
    soc = configured_soc(env)
    want = re.sub(r"^ascend", "", soc, flags=re.IGNORECASE).upper()
    smi = shutil.which("npu-smi", path=env.get("PATH"))
    if not smi:
        return Check("SoC", WARN, f"npu-smi not found: cannot confirm the chip (building for {soc})",
                     "put npu-smi (Ascend driver tools, e.g. /usr/local/sbin) on PATH")
    try:
        out = subprocess.run([smi, "info"], capture_output=True, text=True, timeout=NPU_SMI_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return Check("SoC", WARN, f"npu-smi info did not answer within {NPU_SMI_TIMEOUT_S:g} s (building for {soc})",
                     "check the Ascend driver (npu-smi info by hand)")
    except OSError as exc:
        return Check("SoC", WARN, f"npu-smi info failed: {exc} (building for {soc})", "check the Ascend driver")
    text = out.stdout + out.stderr
    chips = chips_in(text)
    if out.returncode != 0 or not chips:
        tail = _tail(text, 2) or f"exit {out.returncode}"
        return Check("SoC", WARN, f"npu-smi info reported no chip ({tail}); building for {soc}",
                     "check the Ascend driver (npu-smi info by hand)")
    if chips == [want]:
        return Check("SoC", OK, f"npu-smi: {chips[0]}; building for {soc}")
    return Check("SoC", WARN, f"npu-smi reports {', '.join(chips)} but building for {soc}",
                 f"export {SOC_ENV}=Ascend{chips[0]}")


def _tail(text: str, n: int) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith(_MARK)]
    return " | ".join(lines[-n:])


def probe_torch_npu(python: str, env: dict[str, str], timeout: float = PROBE_TIMEOUT_S) -> tuple[dict | None, str, int | None]:
    """Run PROBE in a fresh interpreter. (last JSON it printed or None, all its output, exit code or None)."""
    try:
        out = subprocess.run([python, "-c", PROBE], capture_output=True, text=True, timeout=timeout, env=env,
                             cwd="/")
        rc, stdout, stderr = out.returncode, out.stdout, out.stderr
    except subprocess.TimeoutExpired as exc:
        def s(x):
            return x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
        rc, stdout, stderr = None, s(exc.stdout), s(exc.stderr)
    except OSError as exc:
        return None, f"cannot run {python}: {exc}", _NO_PROCESS
    data = None
    for line in stdout.splitlines():
        if line.startswith(_MARK):
            try:
                data = json.loads(line[len(_MARK):])
            except ValueError:
                pass
    return data, stdout + stderr, rc


def check_torch_npu(env: dict[str, str], python: str) -> list[Check]:
    data, text, rc = probe_torch_npu(python, env)
    where = f"{python}" + ("" if python == sys.executable else f" ({NPU_PYTHON_ENV})")
    if not data or "torch_npu" not in data:
        # lazy: CANN's helpers, only for --backend ascend
        from evokernel.verifier.backends.ascend.feedback import analyze_import
        if rc is None:
            why = f"the probe did not finish within {PROBE_TIMEOUT_S:g} s"
        elif rc == _NO_PROCESS:
            return [Check("torch_npu", FAIL, text, f"point {NPU_PYTHON_ENV} at an existing Python interpreter")]
        elif data is None:
            why = "import torch failed"
        else:
            why = "import torch_npu failed"
        diag = analyze_import(text)
        if data is not None and "No module named 'torch_npu'" in text:
            why = "torch_npu is not installed"
        detail = f"{why} in {where}" + (f": {diag.message}" if diag else "")
        tail = _tail(text, 3)
        if tail:
            detail += f"; output: {tail}"
        if diag and diag.kind == "cann_not_loaded":
            remedy = "source <cann>/set_env.sh (or set ASCEND_SET_ENV) so torch_npu can load CANN's libraries"
        elif data is None:
            remedy = f"install torch in {python} or point {NPU_PYTHON_ENV} at an interpreter that has it"
        else:
            remedy = f"pip install 'evokernel[npu]' (torch-npu) in {python}, or set {NPU_PYTHON_ENV}"
        return [Check("torch_npu", FAIL, detail, remedy)]

    torch_v, npu_v = data.get("torch", "?"), data.get("torch_npu", "?")
    checks = [Check("torch_npu", OK, f"torch_npu {npu_v} with torch {torch_v} ({where})")]
    if _major_minor(torch_v) == _major_minor(npu_v):
        checks.append(Check("torch/torch_npu pairing", OK, f"torch {torch_v} ~ torch_npu {npu_v}"))
    else:
        checks.append(Check("torch/torch_npu pairing", WARN,
                            f"torch_npu {npu_v} is not built for torch {torch_v} (major.minor differ)",
                            f"install the torch-npu release named after torch {_base_version(torch_v)}"))
    count, name = data.get("device_count"), data.get("device_name")
    if count is None:
        err = data.get("device_error")
        checks.append(Check("NPU devices", WARN, "torch_npu.npu.device_count() unavailable"
                            + (f" ({err})" if err else ""), "check `python -c 'import torch_npu; "
                            "print(torch_npu.npu.device_count())'` by hand"))
    elif count == 0:
        checks.append(Check("NPU devices", FAIL, "torch_npu sees 0 NPUs" + (f" ({data['device_error']})"
                            if data.get("device_error") else ""),
                            "check the driver (npu-smi info), ASCEND_RT_VISIBLE_DEVICES and, in a container, "
                            "the /dev/davinci* devices"))
    else:
        checks.append(Check("NPU devices", OK, f"{count} NPU(s)" + (f"; device 0: {name}" if name else "")))
    return checks


def check_device_nodes(dev: Path | None = None) -> Check:
    dev = DEV if dev is None else dev
    manager = (dev / "davinci_manager").exists()
    nodes = sorted(p.name for p in dev.glob("davinci[0-9]*"))
    if manager and nodes:
        return Check("device nodes", OK, f"{dev}/davinci_manager, " + ", ".join(nodes))
    missing = ([] if manager else [f"{dev}/davinci_manager"]) + ([] if nodes else [f"{dev}/davinci[0-9]*"])
    return Check("device nodes", WARN, "missing " + ", ".join(missing),
                 "in a container pass --device /dev/davinci_manager --device /dev/davinciN (and devmm_svm, hisi_hdc)")


def check_helper(env: dict[str, str]) -> Check:
    # lazy: CANN's helpers, only for --backend ascend
    from evokernel.verifier.backends.ascend.binding_build import HELPER_ENV, HelperMissing, find_helper
    try:
        path = find_helper(None, env)
    except HelperMissing as exc:
        return Check("EXEC_NPU_CMD helper", FAIL, str(exc),
                     f"export {HELPER_ENV}=/path/to/pytorch_npu_helper.hpp")
    return Check("EXEC_NPU_CMD helper", OK, str(path))


def _ascend_checks(env: dict[str, str]) -> list[Check]:
    # lazy: CANN's helpers, only for --backend ascend
    from evokernel.verifier.backends.ascend.toolchain import CannNotFound, locate_cann
    checks: list[Check] = []
    cann_env = env
    try:
        cann = locate_cann(env)
    except CannNotFound as exc:
        checks.append(Check("CANN", FAIL, str(exc),
                            "source <cann>/set_env.sh (e.g. /usr/local/Ascend/ascend-toolkit/set_env.sh) "
                            "or export ASCEND_SET_ENV=<path to set_env.sh>"))
    else:
        cann_env = cann.env
        checks.append(Check("CANN", OK, f"{cann.home}"))
        checks.append(_guard("CANN version", lambda: check_cann_version(cann.home)))
        checks.append(_guard("msopgen", lambda: check_tool(
            "msopgen", cann_env, FAIL, "operator projects cannot be generated",
            "install the CANN toolkit (msopgen ships in <cann>/python/site-packages/bin) and source set_env.sh")))
        checks.append(_guard("msprof", lambda: check_tool(
            "msprof", cann_env, WARN, "kernel profiling and its diagnosis are off",
            "install CANN's profiling tools (msprof) and source set_env.sh")))
        checks.append(_guard("bash", lambda: check_tool(
            "bash", cann_env, FAIL, "set_env.sh and build.sh need it", "apt-get install bash")))
    checks.append(_guard("SoC", lambda: check_soc(cann_env)))
    python = env.get(NPU_PYTHON_ENV) or sys.executable
    probe_env = dict(cann_env)
    if env.get("EVOKERNEL_NPU_PYTHONPATH"):  # where the ascend backend finds torch_npu for its processes
        probe_env["PYTHONPATH"] = ":".join(p for p in (env["EVOKERNEL_NPU_PYTHONPATH"], probe_env.get("PYTHONPATH")) if p)
    checks.extend(_guard_many("torch_npu", lambda: check_torch_npu(probe_env, python)))
    checks.append(_guard("device nodes", check_device_nodes))
    checks.append(_guard("EXEC_NPU_CMD helper", lambda: check_helper(env)))
    return checks


# ---------------------------------------------------------------------------------------------------------
# the local model (llama.cpp server for --model local:NAME)
# ---------------------------------------------------------------------------------------------------------
LLAMA_SERVER_MODULES = ("uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


def check_local_model(cache_dir: Path | None = None) -> Check:
    """llama-cpp-python (importable, version, its server's packages), the registry models fetched and verified
    (from the hash cache: never hashes here), and the managed servers recorded in the cache (alive, healthy)."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.models import model_states
    from evokernel.generators.local.server import running_servers

    status, remedy, parts = OK, "", []
    try:
        llama_version = version("llama_cpp_python")
    except PackageNotFoundError:
        llama_version = None
    import_error = None
    if importlib.util.find_spec("llama_cpp") is None:
        import_error = "not installed"
    else:
        try:
            # lazy: the check itself
            import llama_cpp  # noqa: F401  (loads libllama: a broken build fails here)
        except Exception as exc:  # noqa: BLE001
            import_error = f"import llama_cpp failed: {type(exc).__name__}: {exc}"
    missing = [m for m in LLAMA_SERVER_MODULES if importlib.util.find_spec(m) is None]
    if import_error:
        status, remedy = FAIL, "pip install 'evokernel[local]' (builds llama.cpp: about 5 minutes on 2 cores)"
        parts.append(f"llama-cpp-python {import_error}")
    elif missing:
        status, remedy = FAIL, "pip install 'llama-cpp-python[server]' (the server's packages)"
        parts.append(f"llama-cpp-python {llama_version}, but its server lacks {', '.join(missing)}")
    else:
        parts.append(f"llama-cpp-python {llama_version} with its server")
    models = model_states(cache_dir)
    shown = []
    for m in models:
        shown.append(f"{m['name']}: " + ("verified" if m["verified"] else "present, not verified yet" if m["present"]
                                         else "not fetched"))
    parts.append("; ".join(shown))
    if not any(m["present"] for m in models) and status == OK:
        status, remedy = WARN, "evokernel model fetch qwen2.5-coder-1.5b (or use --model local:/path/to/file.gguf)"
    servers = running_servers(cache_dir)
    for s in servers:
        where = f"{s.get('alias')} on 127.0.0.1:{s.get('port')} (pid {s.get('pid')})"
        if s["healthy"]:
            parts.append(f"server {where}: healthy")
        elif s["alive"]:
            parts.append(f"server {where}: running, not answering GET /v1/models in 2 s (busy?)")
        else:
            parts.append(f"server {where}: dead (stale state file {s['state_file']})")
            if status == OK:
                status, remedy = WARN, "evokernel model stop (removes stale state; the next run starts a new server)"
    if not servers:
        parts.append("no managed server running")
    return Check("local model", status, "; ".join(parts), remedy)


def check_ray(env: dict[str, str]) -> Check:
    """Ray, the engine `evokernel eval` runs its units on: importable, and the cluster in RAY_ADDRESS reachable
    when one is named (otherwise each eval starts a private local Ray)."""
    try:
        ray_version = version("ray")
    except PackageNotFoundError:
        return Check("ray", FAIL, "not installed: `evokernel eval` runs its units on Ray",
                     "pip install -e . (ray is a dependency) or pip install 'ray>=2.40,<3'")
    address = env.get("RAY_ADDRESS", "").strip()
    if not address or address in ("local", "auto"):
        return Check("ray", OK, f"ray {ray_version}; evals start a private local Ray (set RAY_ADDRESS or pass "
                                f"--ray HOST:PORT to use a cluster)")
    from evokernel.evals.engine import EngineError, check_reachable  # lazy: ray, only for the ray check

    try:
        check_reachable(address, timeout_s=3.0)
    except EngineError as exc:
        return Check("ray", WARN, f"ray {ray_version}; RAY_ADDRESS={address}: {exc}",
                     "start the cluster (ray start --head) or unset RAY_ADDRESS")
    return Check("ray", OK, f"ray {ray_version}; evals join the cluster at RAY_ADDRESS={address} (it answers)")


def _guard(name: str, fn: Callable[[], Check]) -> Check:
    return _guard_many(name, lambda: [fn()])[0]


def _guard_many(name: str, fn: Callable[[], list[Check]]) -> list[Check]:
    """A check that crashes is a FAIL row, not a doctor that crashes."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001
        return [Check(name, FAIL, f"the check itself failed: {type(exc).__name__}: {exc}",
                      "report this (evokernel doctor bug) and check the item by hand")]


# the check groups a registry row's ``doctor`` names: group -> (environment -> its rows)
CHECKS: dict[str, Callable[[dict[str, str]], list[Check]]] = {
    "python": lambda env: [_guard("python", check_python)],
    "torch": lambda env: [_guard("torch", check_torch)],
    "bubblewrap": lambda env: [_guard("bubblewrap", lambda: check_bwrap(env))],
    "g++": lambda env: [_guard("g++", lambda: check_cxx(env))],
    "ascend-sim emulator": lambda env: [_guard("ascend-sim emulator", check_emulator)],
    "ascend": lambda env: _ascend_checks(env),
    "ray": lambda env: [_guard("ray", lambda: check_ray(env))],
    "local model": lambda env: [_guard("local model", check_local_model)],
}
LOCAL_CHECKS = ("python", "local model")


def targets() -> tuple[str, ...]:
    """What `evokernel doctor --backend` takes: every registered backend, and ``local``."""
    return registry.names() + (LOCAL,)


def run_checks(backend: str, environ: dict[str, str] | None = None) -> list[Check]:
    """Every check for ``backend`` against ``environ`` (default os.environ), in display order."""
    if backend not in targets():
        raise ValueError(f"unknown backend {backend!r}; choose one of {', '.join(targets())}")
    env = dict(os.environ if environ is None else environ)
    groups = LOCAL_CHECKS if backend == LOCAL else registry.spec(backend).doctor
    return [check for group in groups for check in CHECKS[group](env)]


def report(backend: str, checks: list[Check]) -> dict:
    """The `--json` object."""
    counts = {s: sum(c.status == s for c in checks) for s in (OK, WARN, FAIL)}
    return {"backend": backend, "ok": not failed(checks), "counts": counts, "checks": [c.to_dict() for c in checks]}
