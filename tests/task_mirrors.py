"""Public benchmark files for tests, read from the bare git mirrors that `fetch` brings to /work/.mirror (or
$EVOKERNEL_MKB / $EVOKERNEL_KERNELBENCH_REPO): a subfolder of the mirror's HEAD is extracted into a temporary
directory of the test session (never into the project). Tests that need them skip when a mirror is absent."""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

MIRRORS = Path("/work/.mirror")
MKB = Path(os.environ.get("EVOKERNEL_MKB", MIRRORS / "wzzll123+MultiKernelBench" / "repo"))
KERNELBENCH_REPO = Path(os.environ.get("EVOKERNEL_KERNELBENCH_REPO", MIRRORS / "ScalingIntelligence+KernelBench" / "repo"))


def _git_dir(root: Path) -> Path | None:
    if (root / "HEAD").exists():
        return root
    return None


def extract(root: Path, subdir: str, dest: Path) -> Path | None:
    """``subdir`` of the mirror's HEAD under ``dest`` (a checkout's folder is used in place); None if absent."""
    if (root / subdir).is_dir():
        return root / subdir
    git_dir = _git_dir(root)
    if git_dir is None:
        return None
    r = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", subdir],
                       capture_output=True, timeout=300)
    if r.returncode:
        return None
    with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / subdir


@pytest.fixture(scope="session")
def mkb_reference(tmp_path_factory):
    d = extract(MKB, "reference", tmp_path_factory.mktemp("mkb"))
    if d is None:
        pytest.skip("MultiKernelBench mirror not found (fetch github:wzzll123/MultiKernelBench or set EVOKERNEL_MKB)")
    return d


@pytest.fixture(scope="session")
def kernelbench_level3(tmp_path_factory):
    d = extract(KERNELBENCH_REPO, "KernelBench/level3", tmp_path_factory.mktemp("kb3"))
    if d is None:
        pytest.skip("KernelBench mirror not found (fetch github:ScalingIntelligence/KernelBench)")
    return d
