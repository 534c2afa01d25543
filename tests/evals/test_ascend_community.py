"""The community operators of evals/bench/ascend_community.py (read from mirrors at pinned commits; skipped without
them): every one imports (op projects and kernel-launch samples alike), and what `evokernel ascend import` writes
passes our own rules (the project parses, the binding plans, model_src passes the allow-list, the native sources
pass the native rules as ascend-sim checks them) -- the importer and the verifier must agree."""
from pathlib import Path

import pytest

from evokernel.ascend_launch_import import import_sample
from evokernel.evals.bench.ascend_community import OPS, REPOS, extract, load_pins, mirror_git, sha256
from evokernel.verifier.backends.ascend_sim.project import parse_candidate, read_strings

MIRRORS = Path("/work/.mirror")


def _have(repo: str) -> bool:
    return (mirror_git(MIRRORS, repo) / "HEAD").exists()


@pytest.mark.parametrize("op", OPS, ids=[o.name for o in OPS])
def test_every_gathered_operator_imports_and_its_glue_passes_our_rules(op, tmp_path):
    if not _have(op.repo):
        pytest.skip(f"no mirror of {op.repo}")
    from evokernel.verifier.trusted.ast_allowlist import ASCEND_NATIVE, check_glue

    from evokernel.verifier.backends.ascend_sim.backend import static_check_project

    src = extract(MIRRORS, op.repo, op.path, tmp_path)
    dtypes = dict(kv.split("=", 1) for kv in op.dtypes.split(",") if kv) or None
    project, text = import_sample(src, None, op.out_shape or None, dtypes)
    pins = load_pins()
    assert op.name in pins, "run python -m evokernel.evals.bench.ascend_community --pin"
    read = [*project.files.values(), *(f for fs in project.embedded.values() for f in fs)]
    assert {str(f.relative_to(tmp_path)): sha256(f) for f in read} == pins[op.name]
    assert static_check_project(text, sim=True) == []
    cand = parse_candidate(text)
    assert cand.bindings, op.name
    problems = check_glue(read_strings(text)["model_src"], "model_src.py", native_modules=ASCEND_NATIVE,
                          exported=set(cand.bindings))
    assert not problems, problems
    assert op.repo in REPOS
