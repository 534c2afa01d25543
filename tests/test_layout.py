"""Tests mirror the layout: a test file lives in the folder named after the home of what it tests (tests/cli/ for
evokernel/cli/, tests/verifier/trusted/ for verifier/trusted/, ...), so a reader finds a module's tests without a
search and a moved module drags its tests along. The few folders and top-level files that are not one module's
tests are named here, each with its reason."""
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
MAPPED = ("graph", "nodes", "memory", "verifier", "prompts", "evals")  # top-level folders installed as evokernel.*

# test folders that are not a module's home, and why
NOT_A_HOME = {
    "verifier/attacks": "the attack corpus (candidates and tasks judged through the whole verifier), test data",
    "verifier/ascend": "verifier/backends/ascend's tests, one level up: recorded CANN fixtures are named by path "
                       "in docs/ascend.md and the device runner's messages",
    "verifier/ascend_sim": "verifier/backends/ascend_sim's tests, one level up: the emulator's C++ case files and "
                           "harness are named by path in docs/ascend-sim.md and the benches",
}
# top-level test files about the project as a whole, not one module
PROJECT_WIDE = {
    "test_packaging.py": "what pip installs from the project's own files",
    "test_import_contracts.py": "the import contracts over the whole layout",
    "test_layout.py": "this file",
    "test_suites.py": "the shipped task suites (evokernel/suites/, data)",
}


def _home(rel: str) -> bool:
    return (ROOT / "evokernel" / rel).exists() or (rel.split("/")[0] in MAPPED and (ROOT / rel).exists())


def test_every_test_folder_is_named_after_a_home():
    folders = {p.parent.relative_to(TESTS).as_posix() for p in TESTS.rglob("test_*.py")} - {"."}
    astray = sorted(f for f in folders if not _home(f) and f not in NOT_A_HOME)
    assert not astray, f"test folders without a module home: {astray} (move them, or say why in NOT_A_HOME)"
    assert not [f for f in NOT_A_HOME if f not in folders], "NOT_A_HOME names a folder that has no tests any more"


def test_every_top_level_test_file_is_a_top_level_module_or_project_wide():
    astray = []
    for p in sorted(TESTS.glob("test_*.py")):
        name = p.name.removeprefix("test_").removesuffix(".py")
        if p.name in PROJECT_WIDE:
            continue
        if not ((ROOT / "evokernel" / f"{name}.py").is_file() or (ROOT / "evokernel" / name).is_dir()):
            astray.append(p.name)
    assert not astray, f"top-level test files that belong in a home folder: {astray}"


def test_test_file_names_are_unique():
    """Test folders have no __init__.py (pytest's rootdir imports): two files of one name would collide."""
    names = [p.name for p in TESTS.rglob("test_*.py")]
    assert len(names) == len(set(names)), sorted({n for n in names if names.count(n) > 1})
