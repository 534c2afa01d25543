import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
# CLI output is checked as text: rich wraps at 80 columns when there is no terminal, and a long temporary
# path (pytest-xdist adds "popen-gwN/") can then split the words a test looks for
os.environ.setdefault("COLUMNS", "200")
# test helpers (fake_openai, ...) importable from tests in every subfolder
sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parent.parent
SUITES = ROOT / "evokernel" / "suites"
EXAMPLES = ROOT / "evokernel" / "examples" / "cpu"


@pytest.fixture(scope="session", autouse=True)
def verify_daemons(tmp_path_factory):
    """`evokernel verify` starts a warm background verifier: in tests, in a private state directory (inherited
    by every subprocess), and every one still running is stopped when the session ends."""
    from evokernel.cli import verify_daemon

    state = tmp_path_factory.mktemp("evk-verify-state")
    old = os.environ.get(verify_daemon.STATE_ENV)
    os.environ[verify_daemon.STATE_ENV] = str(state)
    yield state
    verify_daemon.stop_all(state)
    if old is None:
        os.environ.pop(verify_daemon.STATE_ENV, None)
    else:
        os.environ[verify_daemon.STATE_ENV] = old


@pytest.fixture(scope="session")
def cache_dir(tmp_path_factory):
    # a private build cache per test session: cold builds are exercised, and tests never share
    # artefacts with a user's cache
    return tmp_path_factory.mktemp("evk-cache")


@pytest.fixture(scope="session")
def verifier(cache_dir):
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=5.0)).start()
    yield v
    v.close()


@pytest.fixture(scope="session")
def suite_task():
    """suite_task("cpu_l1/01_relu.py", batch_size=8) -> Task"""
    from evokernel.tasks.load import load_task

    def make(path: str, **overrides):
        return load_task(SUITES / path, overrides)

    return make


@pytest.fixture(scope="session")
def ascend_verifier(cache_dir):
    """The ascend-sim verifier (timing on: its latency is a model, cheap and deterministic)."""
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("ascend-sim", VerifyConfig(cache_dir=cache_dir, run_timeout_s=20.0)).start()
    yield v
    v.close()
