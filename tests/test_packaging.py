"""The wheel carries every module of every mapped folder (a pyproject-only mapping silently drops
nested packages such as verifier/trusted from the wheel while editable installs still work)."""
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ["evokernel", "graph", "nodes", "memory", "verifier", "prompts", "evals"]


def test_wheel_contains_every_module(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path), str(ROOT)], check=True, capture_output=True, timeout=300)
    wheel = next(tmp_path.glob("evokernel-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = []
    for folder in FOLDERS:
        # code, prompt templates and seed knowledge (M0): an installed EvoKernel needs all three
        emulator = [*(ROOT / folder).rglob("ascend_sim/include/**/*.h"), *(ROOT / folder).rglob("ascend_sim/*.cpp")]
        for path in [*(ROOT / folder).rglob("*.py"), *(ROOT / folder).rglob("*.md"), *emulator]:
            if path.name == "README.md" and folder != "evokernel" and "ascend_sim" not in str(path):
                continue
            rel = path.relative_to(ROOT / folder)
            target = f"evokernel/{rel}" if folder == "evokernel" else f"evokernel/{folder}/{rel}"
            if "__pycache__" not in target and target not in names:
                missing.append(target)
    assert not missing, missing
