"""A libm call from the kernel's own code costs scalar-unit time (issue 28, rt3): the build renames the kernel
object's references to tanhf, expf ... to the runtime's counting wrappers; the emulator's API implementations, which
compile into the same object, call libm through uncharged names. Through the real build and worker (a Verifier)."""
from __future__ import annotations

from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend_sim.hardware import Ascend910B

ROOT = Path(__file__).resolve().parents[3]
TASK = ROOT / "evokernel" / "suites" / "npu_l1" / "05_gelu_tanh.py"
SCALAR = ROOT / "tests" / "verifier" / "attacks" / "twins" / "asc_gelu_scalar_plain.py"  # tanhf per element
VECTOR = Path(__file__).parent / "gelu_vector_project.py"  # the Gelu API
BATCH, DIM, BLOCKS = 8, 3072, 40
HW = Ascend910B()


@pytest.fixture(scope="module")
def verifier(tmp_path_factory):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("ascend-sim", VerifyConfig(cache_dir=tmp_path_factory.mktemp("libm-cache"), timing=True,
                                            run_timeout_s=60.0)).start()
    yield v
    v.close()


def scalar_cycles(verifier, source: Path) -> float:
    from evokernel.tasks.load import load_task

    verdict = verifier.verify(load_task(TASK, {"batch_size": BATCH}), source.read_text())
    assert verdict.feasible, verdict.feedback[:1000]
    kernel = verdict.details["estimate"]["kernels"][0]
    assert kernel["block_dim"] == BLOCKS
    return kernel["scalar_us"] * 1e-6 * HW.clock_hz


def test_a_libm_call_per_element_is_charged_to_the_scalar_unit(verifier):
    per_block = BATCH * DIM // BLOCKS  # elements on the critical core
    # one GetValue, one SetValue and one tanhf per element (each an issued scalar instruction)
    floor = per_block * (2 * (HW.scalar_issue_cycles + HW.scalar_ub_access_cycles)
                         + HW.scalar_issue_cycles + HW.scalar_libm_call_cycles)
    assert scalar_cycles(verifier, SCALAR) >= floor


def test_the_apis_own_math_is_not_charged(verifier):
    # the Gelu API computes with exp in the emulator's header: a few API calls per tile, no per-element charge
    assert scalar_cycles(verifier, VECTOR) < BATCH * DIM // BLOCKS * HW.scalar_libm_call_cycles / 10
