"""The adversarial attack corpus of issue 13 (README.md, manifest.toml): every attack is verified by a
real Verifier and must end with the gate its manifest entry names, within its containment rules.

One verifier serves the whole module; attacks marked `timing` are verified with timing on and few
rounds, and their honest twin (same kernel, no trick) is timed by the same verifier so a speedup
bound is relative to what the kernel honestly earns. EVK_ATTACK_HOST_SECRET is set before the
verifier starts: the class-8 attacks hunt for it in the host environment."""
from __future__ import annotations

import importlib.util
import json
import os
import resource
import secrets
import time
import tomllib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MANIFEST: dict[str, dict] = tomllib.loads((HERE / "manifest.toml").read_text())
CLASSES = ("1-glue", "2-unwatched", "3-native-rules", "4-timing", "4-ascend-sim", "5-scalar-approx", "6-resources",
           "7-protocol", "8-host-view", "9-values")
BACKENDS = ("cpu", "ascend-sim")
GATES = {"hack", "compile", "correctness", "runtime", "timeout", "feasible"}
SECRET_ENV = "EVK_ATTACK_HOST_SECRET"
TIMED = {"warmup": 2, "min_rounds": 6, "max_rounds": 10}
HONEST = ("evokernel/examples/cpu/01_relu.py", "evokernel/suites/cpu_l1/01_relu.py", {"batch_size": 4, "dim": 4096})


def _expected(entry: dict) -> list[str]:
    gate = entry["expect_gate"]
    return [gate] if isinstance(gate, str) else list(gate)


# --- the manifest itself ---------------------------------------------------------------------------


def test_manifest_covers_every_attack_file():
    files = {str(p.relative_to(HERE)) for p in HERE.glob("c[1-9]_*/*.py")}
    assert files == set(MANIFEST), files ^ set(MANIFEST)
    for name, e in MANIFEST.items():
        assert e["class"] in CLASSES and name.startswith(f"c{e['class'][0]}_"), name
        assert e.get("backend", "cpu") in BACKENDS, name
        assert set(_expected(e)) <= GATES, name
        assert e.get("external") or (ROOT / e["task"]).is_file(), name  # external: KernelBench, used in place
        assert e["why"].strip() and e["main"].strip() and e["main"] != "?", name
        for extra in [e.get("twin")] + e.get("victims", []):
            assert extra is None or (HERE / extra).is_file(), (name, extra)
        assert (HERE / name).read_text().lstrip().startswith('"""'), f"{name}: the docstring names the trick"


def test_readme_tables_follow_the_manifest():
    spec = importlib.util.spec_from_file_location("attack_replay", HERE / "replay.py")
    replay = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(replay)
    assert replay.tables() in (HERE / "README.md").read_text(), "regenerate README.md's tables: replay.py --table"


def test_corpus_size():
    counted = [e for e in MANIFEST.values() if e.get("counted", True)]
    assert len(counted) >= 40, len(counted)
    for cls in CLASSES:
        assert sum(e["class"] == cls for e in counted) >= 4, cls


# --- every attack ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def attack_verifier(cache_dir):
    os.environ.setdefault(SECRET_ENV, "evk-host-secret-" + secrets.token_hex(8))
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("cpu", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=10.0)).start()
    yield v
    v.close()


@pytest.fixture(scope="module")
def ascend_attack_verifier(cache_dir):
    """The ascend-sim verifier of the class-4 ascend-sim attacks (started on first use)."""
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("ascend-sim", VerifyConfig(cache_dir=cache_dir, timing=False, run_timeout_s=20.0)).start()
    yield v
    v.close()


def _task_path(entry: dict) -> Path | None:
    """The task file: in the repository, or (external) in KernelBench as `kernelbench/<level>/<file>`, read in place."""
    if not entry.get("external"):
        return ROOT / entry["task"]
    from kernelbench_files import kernelbench_root

    kb = kernelbench_root()
    return None if kb is None else kb / entry["task"].removeprefix("kernelbench/")


def _task(entry: dict, overrides: dict | None = None):
    from evokernel.tasks.load import load_task

    path = _task_path(entry)
    if path is None or not path.is_file():
        pytest.skip(f"{entry['task']} is not on this machine (KernelBench: set EVOKERNEL_KERNELBENCH)")
    return load_task(path, dict(entry.get("set", {}) if overrides is None else overrides))


def _verify(v, task, source: str, timing: bool):
    saved = {k: getattr(v.config, k) for k in ("timing", *TIMED)}
    v.config.timing = timing
    if timing:
        for k, val in TIMED.items():
            setattr(v.config, k, val)
    try:
        return v.verify(task, source)
    finally:
        for k, val in saved.items():
            setattr(v.config, k, val)


def _host_texts(entry: dict) -> list[str]:
    out = []
    for item in entry.get("contain", {}).get("no_host_text", []):
        if item.startswith("$"):
            out.append(os.environ[item[1:]])
        elif item.startswith("@*"):  # every line of that host file, and every KEY=value line's value
            path = Path(item[2:])
            if path.is_file():
                for line in path.read_text(errors="replace").splitlines():
                    value = line.split("=", 1)[1].strip().strip("'\"") if "=" in line else ""
                    out += [t for t in (line.strip(), value) if len(t) >= 8]  # shorter ones ("12") are everywhere
        elif item.startswith("@"):
            path = Path(item[1:])
            if not path.is_file() or not path.read_text(errors="replace").strip():
                continue  # nothing on this host to leak
            out.append(path.read_text(errors="replace").splitlines()[0].strip())
        else:
            out.append(item)
    return out


def _build_cache_bytes(cache_dir) -> int:
    from evokernel.runtime import build_cache

    return sum(build_cache.entry_bytes(Path(cache_dir) / area) for area in build_cache.AREAS)


def _marks(name: str) -> list:
    """slow: only in the long run; open: a door not closed yet, a strict xfail (closing it fails the test until
    the manifest entry loses `open`). An open door judged by a speedup against its twin (`max_speedup_vs_twin`) is
    a non-strict xfail: on a shared machine one run's ratio lands on either side of the bound (rt1's harness
    shortcut measured 2.7x at its base and passed the 1.5x bound once after outputs were copied raw), and so is one
    marked `refused_at_random` (an open door that some rare draw refuses: the entry says what was seen)."""
    e = MANIFEST[name]
    marks = [pytest.mark.slow] if e.get("slow") else []
    if e.get("open"):
        noisy = "max_speedup_vs_twin" in e.get("contain", {}) or bool(e.get("refused_at_random"))
        marks.append(pytest.mark.xfail(strict=not noisy, reason=f"open door: {e['open']}"))
    return marks


@pytest.mark.parametrize("name", [pytest.param(n, marks=_marks(n)) for n in sorted(MANIFEST)])
def test_attack_is_stopped(request, cache_dir, name):
    entry = MANIFEST[name]
    backend = entry.get("backend", "cpu")
    v = request.getfixturevalue("attack_verifier" if backend == "cpu" else "ascend_attack_verifier")
    contain = entry.get("contain", {})
    task = _task(entry)
    for victim in entry.get("victims", []):
        assert v.verify(task, (HERE / victim).read_text()).feasible, f"victim {victim} must be feasible"
    peak_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cache_before = _build_cache_bytes(cache_dir)
    t0 = time.perf_counter()
    try:
        verdict = _verify(v, task, (HERE / name).read_text(), bool(entry.get("timing")))
    except BaseException as exc:  # noqa: BLE001 - an exception escaping the verifier is the finding
        pytest.fail(f"{name}: {type(exc).__name__} escaped Verifier.verify ({exc!s:.300}); {entry['why']}")
    seconds = time.perf_counter() - t0
    outcome = "feasible" if verdict.feasible else verdict.failed_gate
    where = f"{name} ({entry['why']}): {outcome} after {seconds:.1f} s\n{verdict.feedback[:1500]}"
    assert outcome in _expected(entry), where

    # containment
    # every verdict can be shown and stored: printed, logged and sent to a model as UTF-8 (rt3_lone_surrogate_feedback)
    verdict.summary().encode("utf-8")
    json.dumps(verdict.details, default=str, ensure_ascii=False).encode("utf-8")
    seen = verdict.feedback + "\n" + json.dumps(verdict.details, default=str)
    for text in _host_texts(entry):
        assert text not in seen, f"host content {text!r} reached the feedback: {where}"
    if "max_parent_peak_growth_mb" in contain:
        growth_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_before) / 1024
        assert growth_mb <= contain["max_parent_peak_growth_mb"], f"parent peak memory +{growth_mb:.0f} MiB: {where}"
    if "max_cache_file_mb" in contain:
        limit = contain["max_cache_file_mb"] << 20
        big = [p for p in Path(cache_dir).rglob("*") if p.is_file() and p.stat().st_size > limit]
        assert not big, f"the build cache keeps {[(str(p), p.stat().st_size >> 20) for p in big]} (MiB): {where}"
    if "max_cache_growth_mb" in contain:  # what the verdict left in the (session's private) build cache
        growth = _build_cache_bytes(cache_dir) - cache_before
        assert growth <= contain["max_cache_growth_mb"] << 20, f"the build cache grew by {growth >> 20} MiB: {where}"
    if "no_cache_file" in contain:
        planted = list(Path(cache_dir).rglob(contain["no_cache_file"]))
        assert not planted, f"the build published files it planted: {planted}: {where}"
    if verdict.feasible and verdict.speedup is not None:
        if "max_speedup" in contain:
            assert verdict.speedup <= contain["max_speedup"], where
        if "max_speedup_vs_twin" in contain:
            twin = _verify(v, task, (HERE / entry["twin"]).read_text(), True)
            assert twin.feasible and twin.speedup, f"twin {entry['twin']} must be feasible: {twin.feedback[:500]}"
            ratio = verdict.speedup / twin.speedup
            assert ratio <= contain["max_speedup_vs_twin"], (
                f"speedup {verdict.speedup:.2f}x vs the honest twin's {twin.speedup:.2f}x ({ratio:.2f}x): {where}")

    # on ascend-sim the honest kernel the attack changes stays feasible: the defence refuses the trick, not the kernel
    if backend != "cpu" and entry.get("twin"):
        twin = _verify(v, task, (HERE / entry["twin"]).read_text(), bool(entry.get("timing")))
        assert twin.feasible, f"twin {entry['twin']} must be feasible: {twin.failed_gate}: {twin.feedback[:500]}"

    # the verifier keeps judging after a resource or protocol attack
    if entry.get("then_honest"):
        source, task_path, sizes = HONEST
        honest = v.verify(_task({"task": task_path}, sizes), (ROOT / source).read_text())
        assert honest.feasible, f"after {name}, an honest candidate got {honest.failed_gate}: {honest.feedback[:500]}"


def _untimed_twins() -> list[str]:
    """One attack per distinct (task, sizes, twin) among the cpu attacks verified without timing."""
    seen: dict[tuple, str] = {}
    for n, e in sorted(MANIFEST.items()):
        if e.get("twin") and e.get("backend", "cpu") == "cpu" and not e.get("timing"):
            seen.setdefault((e["task"], repr(sorted(e.get("set", {}).items())), e["twin"]), n)
    return sorted(seen.values())


@pytest.mark.parametrize("name", _untimed_twins())
def test_twin_is_feasible(attack_verifier, name):
    """The honest kernel of an attack's task passes (a defence that refuses it too is no defence)."""
    entry = MANIFEST[name]
    verdict = _verify(attack_verifier, _task(entry), (HERE / entry["twin"]).read_text(), False)
    assert verdict.feasible, f"twin {entry['twin']} of {name}: {verdict.failed_gate}: {verdict.feedback[:800]}"
