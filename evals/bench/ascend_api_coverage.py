"""The public Ascend C API, as CANN's documentation indexes it, against what the ascend-sim emulator implements.

The index pages of CANN's asc-devkit documentation (docs/zh/api/...: the basic API list, the advanced API list,
the Utils API list) are read from a mirror of the repository at a pinned commit, each file checked against the
sha256 pinned here. Every indexed API gets:

* whether the Atlas A2 (the 910B the emulator models) supports it, from its own page's product table
  (``<!-- npu="910b" -->`` block: 支持 / 不支持; "not stated" when the page has none);
* whether the emulator declares it: its name (the identifier the index row starts with, e.g. ``DataCopy`` for
  "DataCopy（GM与UB切片数据搬运）") is defined by the emulator's headers (a class, struct, enum, alias, macro, or
  a function called or defined there). Rows naming one form of an overloaded API ("DataCopy（...）") are
  counted by name; the forms the emulator provides are listed in docs/ascend-sim.md.

    python -m evokernel.evals.bench.ascend_api_coverage [--mirror DIR] [--write]   # --write: docs/ascend-api-coverage.md

Mirror: ``DIR`` (default /work/.mirror/mirror-cann+asc-devkit/repo), a clone or bare mirror of
github.com/mirror-cann/asc-devkit (a copy of gitcode.com/cann/asc-devkit).
"""
from __future__ import annotations

import argparse
import hashlib
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
INCLUDE = ROOT / "verifier" / "backends" / "ascend_sim" / "include"
DOC = ROOT / "docs" / "ascend-api-coverage.md"
REPO = "mirror-cann/asc-devkit"
COMMIT = "82b89a15f26329511fc7fbc807d5132a1f9b4ba7"
DEFAULT_MIRROR = Path("/work/.mirror/mirror-cann+asc-devkit/repo")
API = "docs/zh/api"
INDEXES = {  # index page -> (the part of the API it lists, its sha256 at COMMIT)
    f"{API}/SIMD-API/基础API/基础API列表.md": ("basic API", "1c088c1a7692463c5f3c385c7a23055ae135d80503593b9b923bbddcbbc16ac1"),
    f"{API}/SIMD-API/高阶API/高阶API列表.md": ("advanced API", "afe1ac64cc78e39c9cf437290e9fddf65d1df771668c6ab63553a5e63ebb7f86"),
    f"{API}/Utils-API/Utils-API列表.md": ("Utils API", "42300a084ce9e3c05ddc6146cf27813c240ab5846e5641191c3a4fa2db695987"),
}


@dataclass
class Row:
    part: str
    section: str
    name: str
    page: str
    a2: str          # "yes", "no", "not stated"
    ident: str       # the identifier the emulator is searched for
    emulated: bool


def _git(mirror: Path) -> list[str]:
    git = mirror / ".git" if (mirror / ".git").exists() else mirror
    return ["git", f"--git-dir={git}"]


def read(mirror: Path, path: str) -> bytes:
    out = subprocess.run([*_git(mirror), "show", f"{COMMIT}:{path}"], capture_output=True, timeout=60)
    if out.returncode != 0:
        raise FileNotFoundError(f"{REPO}@{COMMIT[:12]}:{path}: {out.stderr.decode(errors='replace')[-200:]}")
    return out.stdout


def a2_support(page: str) -> str:
    """The Atlas A2's line(s) in the page's product table ("产品支持情况"): "yes" when one of its prototypes is
    supported there (支持), "no" when every line says 不支持, else "not stated"."""
    m = re.search(r"产品支持情况(.*?)(?:\n## |\Z)", page, re.S)
    says = re.findall(r"Atlas A2 训练系列产品[^：:\n]*[：:]\s*(不支持|支持)", m.group(1) if m else "")
    if "支持" in says:
        return "yes"
    return "no" if says else "not stated"


def emulator_names() -> set[str]:
    """Identifiers the emulator's headers define or call (comments and strings removed)."""
    names: set[str] = set()
    for h in sorted(INCLUDE.rglob("*.h")):
        text = re.sub(r"/\*.*?\*/", " ", h.read_text(errors="replace"), flags=re.S)
        text = re.sub(r"//[^\n]*", " ", text)
        text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
        names |= set(re.findall(r"\b(?:class|struct|union|enum(?:\s+class)?)\s+([A-Za-z_]\w*)", text))
        names |= set(re.findall(r"#\s*define\s+([A-Za-z_]\w*)", text))
        names |= set(re.findall(r"\busing\s+([A-Za-z_]\w*)\s*=", text))
        names |= set(re.findall(r"\b([A-Za-z_]\w*)\s*(?:<[^<>;{}()]*>\s*)?\(", text))
        # APIs the headers stamp out with their own macros: EVK_UNARY(Exp, ...), EVK_BINARY(Add, ...)
        names |= set(re.findall(r"\bEVK_[A-Z0-9_]+\(\s*([A-Za-z_]\w*)\s*,", text))
    return names


def identifier(name: str) -> str:
    m = re.match(r"\s*([A-Za-z_]\w*)", name)
    return m.group(1) if m else ""


def rows(mirror: Path, check: bool = True) -> tuple[list[Row], dict[str, str]]:
    names = emulator_names()
    out: list[Row] = []
    digests: dict[str, str] = {}
    for index, (part, pinned) in INDEXES.items():
        data = read(mirror, index)
        digests[index] = hashlib.sha256(data).hexdigest()
        if check and pinned and digests[index] != pinned:
            raise RuntimeError(f"{index}: sha256 {digests[index]} is not the pinned {pinned}")
        top, section = "", ""
        base = index.rsplit("/", 1)[0]
        for line in data.decode().splitlines():
            h2 = re.match(r"##\s+(.*)", line) or re.match(r"\*\*表\d+\*\*\s+(.*)", line)
            h3 = re.match(r"#{3,4}\s+(.*)", line)
            if h2:
                top = section = h2.group(1).strip()
                continue
            if h3:
                section = f"{top} / {h3.group(1).strip()}" if top else h3.group(1).strip()
                continue
            m = re.match(r"\|\s*\[([^\]]+)\]\(([^)]+)\)\s*\|", line)
            if not m:
                continue
            name, link = m.group(1).strip(), m.group(2).strip()
            try:
                page = read(mirror, f"{base}/{link}").decode(errors="replace")
                a2 = a2_support(page)
            except FileNotFoundError:
                a2 = "not stated"
            idents = [identifier(part_) for part_ in name.split("/")]
            emulated = any(i in names for i in idents if i)
            out.append(Row(part, section, name, link, a2, "/".join(i for i in idents if i), emulated))
    return out, digests


def render(rs: list[Row], digests: dict[str, str]) -> str:
    lines = ["# The Ascend C API index against ascend-sim", "",
             "Generated by `python -m evokernel.evals.bench.ascend_api_coverage --write` from the index pages of CANN's "
             f"public documentation ({REPO} at `{COMMIT[:12]}`, a copy of gitcode.com/cann/asc-devkit), read "
             "from a mirror, never copied here:", ""]
    lines += [f"- `{p}` (sha256 `{d[:16]}…`)" for p, d in digests.items()]
    lines += ["", "**Atlas A2** is each API's own page's product table (the 910B the emulator models); **emulator** "
              "is whether the emulator's headers define the API's name (a row naming one form of an overloaded API, "
              "`DataCopy（…）`, counts by name: see docs/ascend-sim.md for the forms provided).", "",
              "## Summary", "", "| part | section | APIs | on the A2 | in the emulator | of those on the A2 |",
              "|---|---|---:|---:|---:|---:|"]
    seen: dict[tuple[str, str], list[Row]] = {}
    for r in rs:
        seen.setdefault((r.part, r.section), []).append(r)
    tot = [0, 0, 0, 0]
    for (part, section), group in seen.items():
        a2 = [r for r in group if r.a2 != "no"]
        c = [len(group), len(a2), sum(r.emulated for r in group), sum(r.emulated for r in a2)]
        tot = [t + x for t, x in zip(tot, c)]
        lines.append(f"| {part} | {section} | {c[0]} | {c[1]} | {c[2]} | {c[3]} |")
    lines.append(f"| **all** | | **{tot[0]}** | **{tot[1]}** | **{tot[2]}** | **{tot[3]}** |")
    lines += ["", "\"on the A2\" counts the APIs whose page does not say the A2 lacks them (supported, or not "
              "stated).", "", "## Every API", "", "| part | section | API | Atlas A2 | emulator |", "|---|---|---|---|---|"]
    for r in rs:
        lines.append(f"| {r.part} | {r.section} | {r.name} | {r.a2} | {'yes' if r.emulated else 'no'} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR)
    ap.add_argument("--write", action="store_true", help=f"write {DOC.relative_to(ROOT)}")
    ap.add_argument("--pin", action="store_true", help="print the index pages' sha256 (no check)")
    a = ap.parse_args(argv)
    rs, digests = rows(a.mirror, check=not a.pin)
    if a.pin:
        for p, d in digests.items():
            print(p, d)
        return 0
    text = render(rs, digests)
    if a.write:
        DOC.write_text(text)
    a2 = [r for r in rs if r.a2 != "no"]
    print(f"{len(rs)} indexed APIs, {len(a2)} on the A2; the emulator defines {sum(r.emulated for r in a2)} of those")
    return 0


if __name__ == "__main__":
    sys.exit(main())
