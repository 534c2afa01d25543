"""MultiKernelBench interop: judge a MultiKernelBench run of Ascend C kernels on the ascend-sim emulator.

MultiKernelBench (github.com/wzzll123/MultiKernelBench, MIT) keeps its PyTorch references in
``reference/<category>/<op>.py`` (KernelBench format) and writes each model reply for ``--language ascendc``
to ``output/ascendc/<strategy>/<temp>-<top_p>/<model>/run<n>/<op>.txt``: a reply whose code block defines the
six strings of an operator project (project_json_src, host_tiling_src, host_operator_src, kernel_src,
python_bind_src, model_src). That is EvoKernel's Ascend C candidate format, so both load as they are:

    evokernel ascend mkb RUN_DIR --mkb PATH [--categories activation loss] [--out FILE]

judges every ``<op>.txt`` of RUN_DIR against its reference with the verifier (anti-hack, compile,
correctness with EvoKernel's trials, modelled latency), at sizes fitted to the emulator (``--fit``), and
writes ``result_<categories>.json`` in MultiKernelBench's own shape (``{op: {compiled, correctness,
performance, correctness_info}}``) plus an ``evokernel`` entry per op with the gate, the feedback and the
modelled latency, and prints a table. Replies in the direct-launch format (``--language
ascendc_direct_launch``, ``<<<>>>`` kernels) are not this format and are reported as such.
"""
from __future__ import annotations

import io
import os
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from evokernel.generators.base import GenerationError
from evokernel.generators.extract import extract_candidate
from evokernel.tasks.load import load_task
from evokernel.tasks.task import TaskError

__all__ = ["MKBError", "Reference", "default_mkb", "judge_run", "load_references", "mkb_result"]

DEFAULT_MIRROR = Path("/work/.mirror/wzzll123+MultiKernelBench/repo")


def default_mkb() -> Path | None:
    """EVOKERNEL_MKB, else the local bare mirror when there is one."""
    env = os.environ.get("EVOKERNEL_MKB")
    if env:
        return Path(env)
    return DEFAULT_MIRROR if (DEFAULT_MIRROR / "HEAD").exists() else None


class MKBError(ValueError):
    """The MultiKernelBench checkout or the run directory is not what this command reads."""


@dataclass(frozen=True)
class Reference:
    op: str
    category: str
    path: Path


def _materialise(root: Path, dest: Path) -> Path:
    """A checkout's reference/ folder, or the one at HEAD of a bare git mirror extracted into dest."""
    if (root / "reference").is_dir():
        return root / "reference"
    git_dir = root if (root / "HEAD").exists() else root / "repo" if (root / "repo" / "HEAD").exists() else None
    if git_dir is None:
        raise MKBError(f"{root}: neither a MultiKernelBench checkout (no reference/ folder) nor a git mirror of one")
    r = subprocess.run(["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", "reference"],
                       capture_output=True, timeout=120)
    if r.returncode:
        raise MKBError(f"{root}: cannot read reference/ from the git mirror: {r.stderr.decode(errors='replace')[-300:]}")
    with tarfile.open(fileobj=io.BytesIO(r.stdout)) as tar:
        tar.extractall(dest, filter="data")
    return dest / "reference"


def load_references(reference_dir: Path) -> dict[str, Reference]:
    """op name -> its reference, as MultiKernelBench's dataset.py builds them (files starting with _ skipped)."""
    refs: dict[str, Reference] = {}
    for p in sorted(reference_dir.glob("*/*.py")):
        if not p.name.startswith("_"):
            refs[p.stem] = Reference(p.stem, p.parent.name, p)
    if not refs:
        raise MKBError(f"{reference_dir}: no reference/<category>/<op>.py files")
    return refs


def mkb_result(verdict: Any) -> dict[str, Any]:
    """A verdict in MultiKernelBench's result shape, with EvoKernel's details beside it."""
    gate = verdict.failed_gate or ""
    compiled = bool(verdict.feasible) or gate not in ("hack", "compile", "machine")
    perf = None
    if verdict.feasible and getattr(verdict, "latency_ms", None):
        perf = {"latency_us": round(verdict.latency_ms * 1e3, 3), "kind": verdict.latency_kind}
    return {"compiled": compiled, "correctness": bool(verdict.feasible),
            "performance": perf, "correctness_info": "" if verdict.feasible else (verdict.feedback or "")[:2000],
            "evokernel": {"gate": gate or "passed", "feasible": bool(verdict.feasible),
                          "latency_kind": verdict.latency_kind if verdict.feasible else None,
                          "speedup_vs_eager": verdict.speedup}}


def judge_run(run_dir: Path, mkb_root: Path, verify: Callable[[Any, str], Any], *, categories: Iterable[str] = (),
              fit: str = "auto", progress: Callable[[str], None] = lambda op: None) -> dict[str, dict[str, Any]]:
    """{op: result} for every <op>.txt in run_dir (those of the given categories, if any)."""
    if not run_dir.is_dir():
        raise MKBError(f"{run_dir}: not a directory")
    cats = set(categories)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        refs = load_references(_materialise(mkb_root, Path(tmp)))
        replies = sorted(p for p in run_dir.glob("*.txt") if not p.stem.endswith("_cot"))
        for reply_path in replies:
            op = reply_path.stem
            ref = refs.get(op)
            if ref is None:
                if not cats:  # a reply for no reference: say so rather than drop it
                    results[op] = {"category": "", "reply": str(reply_path), "compiled": False, "correctness": False,
                                   "performance": None,
                                   "correctness_info": f"no reference named {op} (reference/<category>/{op}.py)"}
                continue
            if cats and ref.category not in cats:
                continue
            progress(op)
            base = {"category": ref.category, "reply": str(reply_path)}
            try:
                reply = reply_path.read_text(errors="replace")
            except OSError as exc:
                results[op] = {**base, "compiled": False, "correctness": False, "performance": None,
                               "correctness_info": f"cannot read the reply: {exc}"}
                continue
            if "<<<" in reply and "project_json_src" not in reply:
                results[op] = {**base, "compiled": False, "correctness": False, "performance": None,
                               "correctness_info": "a direct-launch (<<<>>>) reply: not the operator-project "
                                                   "format this command judges"}
                continue
            try:
                source = extract_candidate(reply)
            except GenerationError as exc:
                results[op] = {**base, "compiled": False, "correctness": False, "performance": None,
                               "correctness_info": f"no candidate in the reply: {exc}",
                               "evokernel": {"gate": "extract", "feasible": False}}
                continue
            try:
                task = load_task(ref.path, fit=fit, backend="ascend-sim")
            except TaskError as exc:
                results[op] = {**base, "compiled": False, "correctness": False, "performance": None,
                               "correctness_info": f"the reference does not load: {exc}"}
                continue
            try:
                verdict = verify(task, source)
            except TaskError as exc:  # the reference itself failed (e.g. too big for this machine: try --fit auto)
                results[op] = {**base, "compiled": False, "correctness": False, "performance": None,
                               "correctness_info": f"the reference could not be run: {exc}"}
                continue
            results[op] = {**base, **mkb_result(verdict)}
    return results
