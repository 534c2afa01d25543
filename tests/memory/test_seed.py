"""Seed knowledge (M0): the cpu files parse, are well-formed, and the candidate template really works."""
import re

import pytest
import torch

from evokernel.memory.seed import SeedError, apis_in, backends, load_seed, parse_seed_file
from evokernel.memory.store import KINDS


def test_cpu_seed_items():
    items = load_seed("cpu")
    assert "cpu" in backends()
    assert 10 <= len(items) <= 16
    assert len({i.id for i in items}) == len(items)
    kinds = {i.kind for i in items}
    assert kinds == {"seed", "best_practice"} and kinds <= set(KINDS)
    for it in items:
        assert it.id.startswith("seed:cpu:") and it.key and len(it.text) > 200
        m = it.meta
        assert m["backend"] == "cpu" and m["task"] == "" and m["source"] == "seed" and m["title"]
        assert m["categories"] and len(m["content_hash"]) == 16
        if it.kind == "seed":
            assert m["apis"], it.id
    core = [i for i in items if "*" in i.meta["categories"]]
    assert [i.id for i in core] == ["seed:cpu:00_candidate_format"]
    covered = {c for i in items for c in i.meta["categories"]}
    assert {"activation", "elementwise", "reduction", "softmax", "normalization", "matmul", "pooling", "convolution",
            "scan", "loss", "fusion"} <= covered
    assert load_seed("cpu")[0].meta is not items[0].meta  # fresh copies
    with pytest.raises(SeedError):
        load_seed("no-such-backend")


def test_apis_in_code():
    code = "#pragma omp parallel for reduction(+:s)\nfor (...) s += expf(x[i]);\n// keepdim\n"
    found = apis_in(code, "cpu")
    assert {"omp parallel for", "reduction(+", "expf", "keepdim"} <= set(found)
    assert "omp simd" not in found and apis_in("", "cpu") == []
    assert "expf" not in apis_in("my_expf_helper()", "cpu")  # whole names only


def test_front_matter_errors(tmp_path):
    p = tmp_path / "x.md"
    p.write_text("no front matter\n")
    with pytest.raises(SeedError):
        parse_seed_file(p)
    p.write_text("---\ntitle: t\nkind: api\n---\nbody\n")
    with pytest.raises(SeedError):
        parse_seed_file(p)
    p.write_text("---\nkind: seed\n---\nbody\n")
    with pytest.raises(SeedError):
        parse_seed_file(p)
    p.write_text('---\ntitle: T: sub\napis: [a, "b, c", extern "C"]\ncategories: x\n---\nbody\n')
    front, body = parse_seed_file(p)
    assert front == {"title": "T: sub", "apis": ["a", "b, c", 'extern "C"'], "categories": ["x"], "kind": "seed", "ops": []}
    assert body == "body\n"


def test_candidate_template_compiles_and_runs():
    text = next(i for i in load_seed("cpu") if i.id.endswith("00_candidate_format")).text
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "template", "exec"), ns)
    x = torch.randn(1000)
    out = ns["ModelNew"](2.0, 1.0)(x)
    assert torch.allclose(out, 2.0 * x + 1.0)


def test_seed_code_passes_the_static_rules():
    from evokernel.verifier.trusted.ast_allowlist import check_glue
    from evokernel.verifier.trusted.native_rules import check_native

    for it in load_seed("cpu"):
        for code in re.findall(r"```python\n(.*?)```", it.text, re.S):
            assert check_glue(code) == [], it.id
            cpp = re.search(r'r"""(.*?)"""', code, re.S)
            assert cpp is None or check_native(cpp.group(1)) == [], it.id
        for code in re.findall(r"```cpp\n(.*?)```", it.text, re.S):
            assert check_native(code) == [], it.id


def _cpu_seed_cpp_blocks() -> list[tuple[str, str]]:
    """(label, code) of every ```cpp block and every r\"\"\"...\"\"\" C++ string in a ```python block."""
    blocks = []
    for it in load_seed("cpu"):
        for k, code in enumerate(re.findall(r"```cpp\n(.*?)```", it.text, re.S)):
            blocks.append((f"{it.id} cpp block {k}", code))
        for k, code in enumerate(re.findall(r"```python\n(.*?)```", it.text, re.S)):
            for cpp in re.findall(r'r"""(.*?)"""', code, re.S):
                blocks.append((f"{it.id} python block {k}", cpp))
    return blocks


def test_cpu_seed_cpp_compiles_as_shown(tmp_path):
    """A weak model copies seed snippets literally: every C++ snippet must be a complete translation unit
    (its own #includes, every name defined), so it compiles exactly as shown."""
    import shutil
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    gxx = shutil.which("g++")
    if gxx is None:
        pytest.skip("g++ not found")
    blocks = _cpu_seed_cpp_blocks()
    assert len(blocks) >= 9

    def compile_one(k: int) -> str | None:
        label, code = blocks[k]
        src = tmp_path / f"block{k}.cpp"
        src.write_text(code)
        r = subprocess.run([gxx, "-std=c++17", "-fopenmp", "-march=native", "-fsyntax-only", str(src)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            return None
        first = next((ln for ln in r.stderr.splitlines() if "error" in ln), r.stderr.strip()[:300])
        return f"{label}: {first.replace(str(src), 'snippet')}"

    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [f for f in pool.map(compile_one, range(len(blocks))) if f]
    assert failures == [], "seed C++ snippets that do not compile as shown:\n" + "\n".join(failures)
