"""The backend registry: one `BackendSpec` row per target, read by everything that differs between targets.

    from evokernel.verifier.backends.registry import spec, names
    spec("ascend-sim").fit.max_bytes      # 8 MiB: how small a fit makes a task for the emulator
    spec("ascend").resources              # {"CPU": 1.0, "NPU": 1.0}: what one verifier actor holds in Ray

A row says, for one backend: where its `Backend` class is (verifier/backends/<folder>/), its family (the seed
and prompt folder it shares), the task-fit budget, whether its tensors live in a CPU worker, the Ray resources
of one verifier actor, the reply grammar of a local model, the `evokernel doctor` checks, the sandboxed
worker's loader and how latency is taken. What differs by backend is read from the row: doctor, task fitting,
the pool, the grammar, the template generator, the memory's seed and the eval harness (tools about one backend,
such as `evokernel ascend mkb` on the emulator, still name theirs).

Pure data, importable from any layer (it imports nothing of the project): the class is named by its import
path and resolved by `verifier.backends.factory.make_backend`, so that task fitting or the CLI never
imports a backend's build machinery. Adding a backend (say CUDA) = one folder under verifier/backends/
and one row here (docs/backends.md walks through it); tests/verifier/backends/test_registry.py checks every
row against its class.
"""
from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["BackendSpec", "Fit", "REGISTRY", "DEFAULT", "family", "names", "register", "spec", "unregister"]

MiB = 1 << 20


@dataclass(frozen=True)
class Fit:
    """How large a task may be on this backend (the numbers of evokernel.tasks.fit.FitBudget)."""

    max_bytes: int  # inputs + output + parameters
    min_ms: float  # the window of estimated eager time (reported; a fit never scales up)
    max_ms: float | None  # None: no time limit
    aim_ms: float | None  # a shrink aims here


@dataclass(frozen=True)
class BackendSpec:
    name: str  # the --backend value
    backend_class: str  # "module:Class" of its verifier.backends.base.Backend
    family: str  # seed knowledge (memory/seed/<family>/) and prompts (prompts/<family>/) shared with its family
    fit: Fit
    # the candidate's tensors live in a CPU verifier worker (tasks.fit.check_size: the worker limit applies);
    # False for a device that holds them itself (bounded by its fit budget)
    worker_memory: bool
    # what one verifier actor of the pool holds in Ray (verifier/pool.py); a pool member without a device
    # resource other than CPU claims and pins one core of its host
    resources: dict[str, float] = field(default_factory=lambda: {"CPU": 1.0})
    device_env: str | None = None  # the variable Ray sets to the device it gave an actor (reported by the pool)
    grammar: str = "one_python_block"  # the reply grammar of a local model (generators/grammar.py GRAMMARS)
    # `evokernel doctor --backend NAME`: the check groups, in display order (evokernel/cli/doctor.py CHECKS)
    doctor: tuple[str, ...] = ("python", "torch", "bubblewrap", "ray")
    worker_loader: str = "python"  # how the sandboxed worker loads a candidate (sandboxed/worker.py LOADERS)
    timing: str = "wall"  # "wall": timed by the parent; "model": estimated by the backend; "device": on the device
    device_judge: str | None = None  # timing "device": "module:Class" of the judge of gates 2-4 (trusted side)
    template: str | None = None  # the template generator's back end (generators/template/<template>/), if any

    @property
    def device(self) -> str | None:
        """The Ray resource naming this backend's device (None: it runs on a CPU core)."""
        return next((k for k in self.resources if k != "CPU"), None)


REGISTRY: dict[str, BackendSpec] = {}
DEFAULT = "cpu"


def register(row: BackendSpec) -> BackendSpec:
    """Add (or replace) a row; returns it. Tests register fake backends this way (and `unregister` them)."""
    REGISTRY[row.name] = row
    return row


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def names() -> tuple[str, ...]:
    return tuple(REGISTRY)


def spec(name: str) -> BackendSpec:
    """The row of backend ``name``; a ValueError naming the known ones otherwise."""
    try:
        return REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown backend {name!r} (available: {', '.join(REGISTRY)})") from None



def family(backend: str) -> str:
    """The family (seed and prompt folder name) of ``backend``: ``ascend-sim`` -> ``ascend``; a name that is no
    backend is a family of its own.

    The Ascend C emulator (``ascend-sim``) and real Ascend NPUs (``ascend``) take the same candidates and the same
    API, so they share one seed folder (``memory/seed/ascend/``) and one prompt folder (``prompts/ascend/``), and
    their seed items have the same ids (``seed:ascend:<stem>``): what the memory learns about those items on the
    emulator carries over to the hardware."""
    row = REGISTRY.get(backend)
    return row.family if row is not None else backend


register(BackendSpec(
    name="cpu", backend_class="evokernel.verifier.backends.cpu:CpuBackend", family="cpu",
    # one CPU core measures the eager reference: 1-50 ms (a shrink aims at 15 ms), and at most 128 MiB of task
    # tensors (the built-in cpu suites, sized by hand for this machine, all fit unchanged)
    fit=Fit(max_bytes=128 * MiB, min_ms=1.0, max_ms=50.0, aim_ms=15.0), worker_memory=True,
    grammar="cpu_candidate", doctor=("python", "torch", "bubblewrap", "g++", "ray"), template="cpu"))

register(BackendSpec(
    name="ascend-sim", backend_class="evokernel.verifier.backends.ascend_sim.backend:AscendSimBackend",
    family="ascend",
    # the Ascend C emulator runs every candidate element by element on the CPU: much smaller tasks (the npu
    # suites are 0.5-4 MiB)
    fit=Fit(max_bytes=8 * MiB, min_ms=0.05, max_ms=10.0, aim_ms=2.0), worker_memory=True,
    doctor=("python", "torch", "bubblewrap", "g++", "ascend-sim emulator", "ray"), worker_loader="ascend",
    timing="model", template="ascend"))

register(BackendSpec(
    name="ascend", backend_class="evokernel.verifier.backends.ascend.backend:AscendBackend", family="ascend",
    # a real NPU: device memory is the limit, not the CPU's time
    fit=Fit(max_bytes=2048 * MiB, min_ms=0.0, max_ms=None, aim_ms=None), worker_memory=False,
    resources={"CPU": 1.0, "NPU": 1.0}, device_env="ASCEND_RT_VISIBLE_DEVICES",
    doctor=("python", "torch", "bubblewrap", "ascend", "ray"), timing="device",
    device_judge="evokernel.verifier.backends.ascend.device_judge:DeviceJudge", template="ascend"))
