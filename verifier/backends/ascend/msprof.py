"""Read `msprof op` output: OpBasicInfo / PipeUtilization CSVs -> a measured `PipeProfile` and its diagnosis.

Layout (ascend-toolchain.md §3.1): `msprof op --output=DIR ...` writes `DIR/OPPROF_<timestamp>_<XXX>/`.
With a single kernel the CSVs sit at the top of that folder (`OpBasicInfo.csv`, `PipeUtilization.csv`, ...);
with several kernels/launches they sit in `<OpName>/<launch index>/<Metric>_<timestamp>.csv`, and a
multi-device run adds `device<N>/`. So the files are found by a recursive glob (`OpBasicInfo*.csv`,
`PipeUtilization*.csv`) anywhere below DIR, whatever the nesting.

- OpBasicInfo: one row per profiled launch; columns `Op Name, Op Type, Task Duration(us), Block Dim,
  Mix Block Dim, Device Id, Pid, Current Freq, Rated Freq` (910B; 310P has no Mix Block Dim).
- PipeUtilization: one row per block (`block_id`/`sub_block_id`); we read `aiv_time(us)`,
  `aiv_vec_time(us)`, `aiv_mte2_time(us)`, `aiv_mte3_time(us)`, `aiv_scalar_time(us)` and their `_ratio`s.

Aggregation (the paper's protocol: the mean over the profiling passes after warm-up; msprof itself skips the
`--warm-up` launches): Task Duration, Block Dim and the frequencies are the mean over all OpBasicInfo rows.
Each PipeUtilization file is one pass; within a pass the critical core (largest `aiv_time(us)`) gives the
pipe times, as in the latency model; the passes are then averaged.

Column names are matched tolerantly (BOM, case, spaces: "Task Duration(us)" == "task duration (us)").
Pure Python (csv module only).
"""
from __future__ import annotations

import csv
import dataclasses
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from .diagnosis import BOUND_TEXT, DEFAULT_HW, classify_bound, core_use_hints, pct

LABEL = "measured (msprof op on the device)"
PIPES = ("mte2", "vector", "mte3", "scalar")


class ProfileError(ValueError):
    """The msprof output is missing, empty or not in the recorded format."""


def _key(name: str) -> str:
    return re.sub(r"[\s_]+", "", name.replace("\ufeff", "")).lower()


def _num(v) -> float | None:
    if v is None:
        return None
    s = str(v).strip()
    if not s or s.upper() in ("N/A", "NA", "-", "NAN"):
        return None
    try:
        return float(s)
    except ValueError:
        return None


def _read_csv(path: Path) -> list[dict[str, str]]:
    """Rows as {normalised column: text}. BOM-tolerant; stray binary bytes replaced."""
    try:
        text = path.read_bytes().decode("utf-8-sig", errors="replace")
    except OSError as e:
        raise ProfileError(f"cannot read {path}: {e}") from e
    rows = list(csv.reader(io.StringIO(text)))
    rows = [r for r in rows if any(c.strip() for c in r)]
    if not rows:
        raise ProfileError(f"{path.name} is empty")
    header = [_key(h) for h in rows[0]]
    out = []
    for r in rows[1:]:
        if len(r) != len(header):
            raise ProfileError(f"{path.name}: a row has {len(r)} fields, the header {len(header)} (garbled file?)")
        out.append(dict(zip(header, r)))
    return out


def find_files(output_dir: str | Path, kernel_name: str | None = None) -> tuple[list[Path], list[Path]]:
    """(OpBasicInfo*.csv, PipeUtilization*.csv) anywhere below output_dir, sorted by path.

    kernel_name: in the several-kernels layout keep only files under a `<OpName>` folder starting with it
    (msprof's --kernel-name is a prefix match too); files of the single-kernel layout are always kept.
    """
    root = Path(output_dir)
    if not root.is_dir():
        raise ProfileError(f"msprof output folder {root} does not exist")
    basic = sorted(root.rglob("OpBasicInfo*.csv"))
    pipe = sorted(root.rglob("PipeUtilization*.csv"))
    if kernel_name:
        def keep(p: Path) -> bool:
            rel = p.relative_to(root).parts[:-1]
            named = [d for d in rel if not d.startswith(("OPPROF_", "device")) and not d.isdigit()]
            return not named or any(d.startswith(kernel_name) for d in named)
        basic, pipe = [p for p in basic if keep(p)], [p for p in pipe if keep(p)]
    return basic, pipe


@dataclass
class PipeProfile:
    """A measured kernel profile. Times in microseconds, means over the profiled launches."""
    task_duration_us: float
    block_dim: int | None
    aiv_time_us: float | None      # the critical core's AIV time (None: no PipeUtilization)
    vec_us: float | None
    mte2_us: float | None
    mte3_us: float | None
    scalar_us: float | None
    vec_ratio: float | None
    mte2_ratio: float | None
    mte3_ratio: float | None
    scalar_ratio: float | None
    current_freq_mhz: float | None = None
    rated_freq_mhz: float | None = None
    op_names: list[str] = field(default_factory=list)
    launches: int = 0              # OpBasicInfo rows averaged
    passes: int = 0                # PipeUtilization files averaged
    blocks: int = 0                # block rows in a pass (max over passes)
    task_durations_us: list[float] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def ratios(self) -> dict[str, float]:
        r = {"mte2": self.mte2_ratio, "vector": self.vec_ratio, "mte3": self.mte3_ratio, "scalar": self.scalar_ratio}
        return {k: v for k, v in r.items() if v is not None}

    def diagnose(self, cores: int | None = None, launch_us: float | None = None) -> dict:
        return diagnose(self, cores=cores, launch_us=launch_us)

    def profile_text(self, cores: int | None = None, launch_us: float | None = None) -> str:
        return diagnose(self, cores=cores, launch_us=launch_us)["profile"]


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _col(row: dict[str, str], *names: str) -> float | None:
    for n in names:
        v = _num(row.get(_key(n)))
        if v is not None:
            return v
    return None


def parse(output_dir: str | Path, kernel_name: str | None = None) -> PipeProfile:
    """Parse everything `msprof op --output=output_dir` wrote. Raises ProfileError with a clear reason."""
    basic_files, pipe_files = find_files(output_dir, kernel_name)
    if not basic_files:
        raise ProfileError(f"no OpBasicInfo*.csv below {output_dir} (msprof collected nothing: wrong "
                           f"--kernel-name{' ' + repr(kernel_name) if kernel_name else ''}, or the kernel never ran)")
    durations, dims, cur, rated, names = [], [], [], [], []
    for f in basic_files:
        rows = _read_csv(f)
        if rows and _key("Task Duration(us)") not in rows[0]:
            raise ProfileError(f"{f.name} has no 'Task Duration(us)' column (columns: {', '.join(rows[0])})")
        for r in rows:
            d = _col(r, "Task Duration(us)")
            if d is None:
                raise ProfileError(f"{f.name}: unreadable Task Duration(us) {r.get(_key('Task Duration(us)'))!r}")
            durations.append(d)
            for lst, col in ((dims, "Block Dim"), (cur, "Current Freq"), (rated, "Rated Freq")):
                v = _col(r, col)
                if v is not None:
                    lst.append(v)
            n = (r.get(_key("Op Name")) or "").strip()
            if n and n not in names:
                names.append(n)
    if not durations:
        raise ProfileError(f"OpBasicInfo file(s) below {output_dir} have no rows")

    notes: list[str] = []
    per_pass: list[dict[str, float | None]] = []
    blocks = 0
    for f in pipe_files:
        rows = _read_csv(f)
        if not rows:
            continue
        if _key("aiv_time(us)") not in rows[0]:
            notes.append(f"{f.name} has no aiv_time(us) column (not a vector kernel?): pipe times unknown")
            continue
        timed = [r for r in rows if _col(r, "aiv_time(us)") is not None]
        if not timed:
            continue
        blocks = max(blocks, len(timed))
        crit = max(timed, key=lambda r: _col(r, "aiv_time(us)"))
        t = _col(crit, "aiv_time(us)")
        p = {"aiv": t}
        for short, col in (("vector", "aiv_vec"), ("mte2", "aiv_mte2"), ("mte3", "aiv_mte3"), ("scalar", "aiv_scalar")):
            tv = _col(crit, f"{col}_time(us)")
            rv = _col(crit, f"{col}_ratio")
            if rv is None and tv is not None and t:
                rv = min(1.0, tv / t)
            p[short], p[short + "_ratio"] = tv, rv
        per_pass.append(p)
    if pipe_files and not per_pass and not notes:
        notes.append("PipeUtilization file(s) without rows: pipe times unknown")
    if not pipe_files:
        notes.append("no PipeUtilization*.csv (collected with --aic-metrics without PipeUtilization?): "
                     "pipe times unknown")

    def pmean(k: str) -> float | None:
        return _mean([p[k] for p in per_pass if p.get(k) is not None])

    dim = _mean(dims)
    return PipeProfile(
        task_duration_us=_mean(durations), block_dim=None if dim is None else int(round(dim)),
        aiv_time_us=pmean("aiv"), vec_us=pmean("vector"), mte2_us=pmean("mte2"), mte3_us=pmean("mte3"),
        scalar_us=pmean("scalar"), vec_ratio=pmean("vector_ratio"), mte2_ratio=pmean("mte2_ratio"),
        mte3_ratio=pmean("mte3_ratio"), scalar_ratio=pmean("scalar_ratio"),
        current_freq_mhz=_mean(cur), rated_freq_mhz=_mean(rated), op_names=names, launches=len(durations),
        passes=len(per_pass), blocks=blocks, task_durations_us=durations,
        files=[str(f) for f in basic_files + pipe_files], notes=notes)


def diagnose(profile: PipeProfile, cores: int | None = None, launch_us: float | None = None) -> dict:
    """The same shape of bottleneck diagnosis as ascend_sim.latency_model.Estimate.to_json(): the keys that
    a measurement can fill (us, device_us, launch_us, block_dim, cores, cores_used, waves, bound, *_us,
    aiv_* times and ratios, hints, notes, label) plus "profile" = the text refinement reads.

    device_us is the critical core's aiv_time (Task Duration when no PipeUtilization was collected);
    launch_us is the modelled launch floor (hardware.py) — a kernel whose device work is shorter is
    "launch"-bound, as in the model. HBM saturation is not separable from the MTE pipes in
    PipeUtilization alone: a memory-bound kernel shows up as "mte2"/"mte3".
    """
    cores = int(cores or DEFAULT_HW.aiv_cores)
    launch = float(DEFAULT_HW.launch_us if launch_us is None else launch_us)
    p = profile
    device = p.aiv_time_us if p.aiv_time_us is not None else p.task_duration_us
    ratios = p.ratios()
    bound = classify_bound(device, launch, ratios)
    block_dim = int(p.block_dim or p.blocks or 0)
    waves = -(-block_dim // cores) if block_dim else 0
    used = min(block_dim, cores) if block_dim else 0
    hints = core_use_hints(block_dim, cores, bound)
    if bound == "launch":
        hints.insert(0, f"the device work ({device:.2f} us) is shorter than the launch overhead "
                        f"(~{launch:.1f} us): little to gain inside the kernel at this size")
    elif bound in ("mte2", "mte3"):
        hints.append(f"memory-bound ({'GM->UB' if bound == 'mte2' else 'UB->GM'} copies busy "
                     f"{pct(ratios[bound])} of the core time): only fewer or larger copies help (read each input "
                     "once, fuse passes, keep intermediates in UB, copies of >= 16 KB)")
    elif bound == "vector":
        hints.append(f"vector-bound ({pct(ratios['vector'])}): fewer passes over the data (fuse instructions, "
                     "Muls instead of Div by a constant, half where precision allows)")
    elif bound == "scalar":
        hints.append(f"scalar-bound ({pct(ratios['scalar'])}): replace element loops (GetValue/SetValue) by "
                     "vector instructions and DataCopy; fewer, larger API calls")
    elif bound == "latency" and ratios:
        top = max(ratios.values())
        hints.append(f"no pipe is saturated (busiest {pct(top)}): the pipes wait on each other or on GM; "
                     "double-buffer the queues (BUFFER_NUM=2), drop needless PipeBarrier<PIPE_ALL>/WaitFlag")
    notes = list(p.notes)
    if p.current_freq_mhz and p.rated_freq_mhz and p.current_freq_mhz < 0.95 * p.rated_freq_mhz:
        notes.append(f"the core ran at {p.current_freq_mhz:.0f} of {p.rated_freq_mhz:.0f} MHz (throttled or "
                     "too little warm-up): times are pessimistic")

    def r(k: str) -> float:
        return ratios.get(k, 0.0)

    def z(x: float | None) -> float:
        return 0.0 if x is None else float(x)

    out = {
        "us": p.task_duration_us, "device_us": device, "launch_us": launch, "block_dim": block_dim, "cores": cores,
        "cores_used": used, "waves": waves, "bound": bound,
        "mte2_us": z(p.mte2_us), "vec_us": z(p.vec_us), "mte3_us": z(p.mte3_us), "scalar_us": z(p.scalar_us),
        "aiv_time": z(p.aiv_time_us), "aiv_vec_time": z(p.vec_us), "aiv_mte2_time": z(p.mte2_us),
        "aiv_mte3_time": z(p.mte3_us), "aiv_scalar_time": z(p.scalar_us),
        "aiv_vec_ratio": r("vector"), "aiv_mte2_ratio": r("mte2"), "aiv_mte3_ratio": r("mte3"),
        "aiv_scalar_ratio": r("scalar"), "hints": hints, "notes": notes, "label": LABEL,
    }
    w = "wave" if waves == 1 else "waves"
    lines = [f"measured {p.task_duration_us:.1f} us (msprof Task Duration, mean of {p.launches} launch(es)); "
             f"critical core {device:.1f} us; {block_dim} block(s) on {used} of {cores} AIV cores, {waves} {w}"]
    if ratios:
        lines.append(f"critical core: MTE2 {pct(r('mte2'))} busy, VEC {pct(r('vector'))}, MTE3 {pct(r('mte3'))}, "
                     f"scalar {pct(r('scalar'))}")
    else:
        lines.append("pipe utilisation not collected")
    lines.append(f"bound: {BOUND_TEXT.get(bound, bound)}")
    lines += [f"hint: {h}" for h in hints]
    lines += [f"note: {n}" for n in notes]
    out["profile"] = "\n".join(lines)
    return out


def to_json(profile: PipeProfile) -> dict:
    return dataclasses.asdict(profile)
