"""The backend registry (verifier/backends/registry.py): every backend has a complete row that agrees with its
class, and a backend registered at run time is picked up by everything that differs between backends."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from evokernel.cli import doctor
from evokernel.tasks import fit as task_fit
from evokernel.evals.engine import unit_resources
from evokernel.verifier.backends.registry import family
from evokernel.generators.grammar import GRAMMARS, grammar_for
from evokernel.tasks.task import TaskError
from evokernel.tasks.load import load_task
from evokernel.verifier.backends.base import Backend
from evokernel.verifier.backends.factory import backend_class, make_backend, resolve
from evokernel.verifier.backends.registry import REGISTRY, BackendSpec, Fit, names, register, spec, unregister
from evokernel.verifier.pool import device_resources
from evokernel.verifier.sandboxed.worker import LOADERS, Worker

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "evokernel" / "suites" / "cpu_l1" / "15_matmul.py"


def test_the_registry_holds_the_three_backends():
    assert names() == ("cpu", "ascend-sim", "ascend")


@pytest.mark.parametrize("name", ["cpu", "ascend-sim", "ascend"])
def test_each_row_is_complete_and_agrees_with_its_backend(name):
    row = spec(name)
    cls = backend_class(name)
    assert issubclass(cls, Backend) and cls.name == name
    assert cls.timing_mode == row.timing
    assert (row.device_judge is not None) == (row.timing == "device")
    if row.device_judge:
        assert callable(getattr(resolve(row.device_judge), "judge"))
    # the loader the backend asks the worker for is one the worker has, and the row says it
    assert getattr(cls, "load_options", {}).get("loader", "python") == row.worker_loader
    assert row.worker_loader in LOADERS and callable(getattr(Worker, LOADERS[row.worker_loader]))
    assert row.grammar in GRAMMARS
    assert set(row.doctor) <= set(doctor.CHECKS) and row.doctor[0] == "python"
    assert (ROOT / "memory" / "seed" / row.family).is_dir() and (ROOT / "prompts" / row.family).is_dir()
    assert row.template is None or (ROOT / "evokernel" / "generators" / "template" / row.template).is_dir()
    assert row.resources["CPU"] == 1.0
    assert task_fit.budget_for(name).max_bytes == row.fit.max_bytes


def test_an_unknown_backend_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="unknown backend 'cuda'.*available: cpu, ascend-sim, ascend"):
        make_backend("cuda", tmp_path)
    with pytest.raises(TaskError, match="no fit budget for backend 'cuda'"):
        task_fit.budget_for("cuda")
    with pytest.raises(ValueError, match="unknown backend 'cuda'"):
        doctor.run_checks("cuda", {})


class FakeBackend(Backend):
    """A device backend that exists only in this test (no class of the project names it)."""

    name = "fake-dev"

    def __init__(self, cache_dir: Path, build_timeout_s: float = 600.0):
        self.cache_dir = cache_dir

    def static_check(self, source: str) -> list[Any]:
        return []

    def handle_build(self, request: dict[str, Any], log: Any, rules: bool = True) -> dict[str, Any]:
        return {"ok": False, "error": "fake"}


@pytest.fixture
def fake():
    row = register(BackendSpec(
        name="fake-dev", backend_class=f"{__name__}:FakeBackend", family="cpu",
        fit=Fit(max_bytes=1 << 20, min_ms=0.0, max_ms=5.0, aim_ms=1.0), worker_memory=False,
        resources={"CPU": 1.0, "FAKE": 1.0}, device_env="FAKE_VISIBLE_DEVICES", doctor=("python", "torch"),
        grammar="cpu_candidate"))
    yield row
    unregister("fake-dev")
    assert "fake-dev" not in REGISTRY


def test_a_registered_backend_is_picked_up_without_other_edits(fake, tmp_path):
    # doctor: its checks, in the row's order, and the CLI's list of backends
    assert "fake-dev" in doctor.targets()
    assert [c.name for c in doctor.run_checks("fake-dev", {})] == ["python", "torch"]
    # task_fit: its budget shrinks a task below what the cpu budget keeps
    assert task_fit.budget_for("fake-dev").max_bytes == 1 << 20 and "fake-dev" in task_fit.BUDGETS
    fitted = load_task(TASK, fit="auto", backend="fake-dev")
    assert fitted.fit["bytes"] <= 1 << 20 < load_task(TASK, fit="auto", backend="cpu").fit["bytes"]
    assert not task_fit.limited("fake-dev") and task_fit.limited("cpu")
    # the pool and the eval engine: what one actor / unit holds
    assert device_resources("fake-dev") == {"CPU": 1.0, "FAKE": 1.0} and fake.device == "FAKE"
    assert unit_resources("fake-dev") == {"CPU": 1.0, "FAKE": 1.0}
    # the verifier's backend object, the reply grammar, the memory's family
    assert isinstance(make_backend("fake-dev", tmp_path), FakeBackend)
    assert grammar_for("fake-dev") == GRAMMARS["cpu_candidate"]
    assert family("fake-dev") == "cpu"
