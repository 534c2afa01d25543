"""The model's state after a call (trusted side): ModelNew's parameters and buffers against Model's.

A forward has side effects a returned output does not show: a training-mode BatchNorm updates ``running_mean``,
``running_var`` and ``num_batches_tracked`` in place, and a kernel may write into the tensors it is handed (red team
round 10: a kernel that skipped the update, and one that transposed its square weight in place on the first call and
read it as W^T after; both gave every output right). So after every correctness trial's call, and after the
timing's rounds, the parent compares the two models' state -- the tensors ``named_parameters()`` and
``named_buffers()`` give (the worker calls nn.Module's own methods; a tied tensor once), by name -- under one rule:

**A call changes the model's state exactly as the reference's call does.**

* A tensor of Model that its calls changed since it was built (the reference worker compares every one with its
  value as built, bit for bit: its own arithmetic, so trusted) must exist in ModelNew under the same name and shape,
  and hold the value Model holds after the same calls: floating values, in the coarser of the two dtypes, within
  the configured tolerance (the outputs' elementwise one, 1e-2) x (1 + |expected|) elementwise with NaN/Inf position by
  position (`_state_compare`; no norm-wise rule:
  a statistic that is ~0 is rounding noise on both sides), integers and bools exactly. A ModelNew without it, or with another shape, is refused: ``load_state_dict`` of a Model checkpoint and
  ``state_dict()`` after training go by name.
* Every other tensor of ModelNew -- whether Model has the name or not -- must hold after the calls, bit for bit, what
  it held right after construction (the parent keeps a copy, taken by a ``state`` request right after ``init``).
  How a constructor lays out, casts or renames the reference's layers stays its choice (the trials judge the outputs
  that follow from it, "Perturbed parameters"); what a forward writes into them is not: scratch data, counters and
  re-laid-out copies belong outside the registered parameters and buffers.

The sides run the same calls on the same inputs: one forward per trial (a trial whose reference output is drawn
again rewinds the reference's state to before the discarded run), and one per timed round on each side. Probing
forwards of the reference (planted values, subnormals, ties, offsets) restore its buffers, as before. The reference
sends only the tensors its calls changed (usually none); the candidate sends all of its tensors (one copy into its
region per checked call), compared in place with the copy taken after construction.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from evokernel.verifier.message_codec import STATE, ProtocolError, TensorMeta, align
from evokernel.verifier.trusted import correctness, regions
from evokernel.verifier.trusted.failures import Fail

# a candidate's parameters and buffers may take this many times the reference's (plus SLACK_BYTES) in its region
STATE_FACTOR, SLACK_BYTES = 4, 64 << 20
RULE = ("a forward must change the model's parameters and buffers exactly as Model's forward does (state_dict() "
        "after a call must hold what Model's holds): keep scratch data, counters and re-laid-out copies outside the "
        "registered parameters and buffers")


@dataclass
class Entry:
    """One parameter or buffer as a worker described it."""
    name: str
    kind: str
    shape: tuple[int, ...]
    dtype: str
    changed: bool
    meta: TensorMeta | None

    def describe(self) -> str:
        return f"{self.kind} {self.name} ({self.dtype}{list(self.shape)})"


def parse(entries: Any, capacity: int, who: str) -> dict[str, Entry]:
    """A worker's state entries, validated (their tensors within its region, names unique)."""
    try:
        checked = STATE.check(entries if entries is not None else [], f"{who}'s state")
        out: dict[str, Entry] = {}
        for e in checked:
            meta = TensorMeta.from_json(e["tensor"], capacity) if "tensor" in e else None
            if meta is None and who == "candidate":  # a candidate's worker writes every tensor
                raise ProtocolError(f"no tensor for {e['name']!r}")
            if e["name"] in out:
                raise ProtocolError(f"{who}'s state names {e['name']!r} twice")
            out[e["name"]] = Entry(e["name"], e["kind"], tuple(e["shape"]), e["dtype"], e.get("changed") is True, meta)
        return out
    except ProtocolError as exc:
        raise Fail("runtime", f"malformed model state from the {who} worker: {exc}") from None


def _bytes(handle: Any, meta: TensorMeta) -> torch.Tensor:
    """A view of a tensor's bytes in a worker's region (as 8-byte words where they divide it: regions are
    64-byte aligned). Compared at once, before anything else writes there."""
    if meta.nbytes == 0:
        return torch.empty(0, dtype=torch.uint8)
    word = torch.int64 if meta.nbytes % 8 == 0 and meta.offset % 8 == 0 else torch.uint8
    return torch.frombuffer(handle.mm, dtype=word, count=meta.nbytes // word.itemsize, offset=meta.offset)


def _typed(handle: Any, e: Entry) -> torch.Tensor | None:
    """A private copy of an entry's tensor in its own dtype and shape (None: a dtype the codec does not carry)."""
    assert e.meta is not None
    if e.dtype not in regions.DTYPES or e.meta.dtype != e.dtype:
        return None
    t = regions.tensor(handle, e.meta)
    n = 1
    for d in e.shape:
        n *= d
    return t.reshape(e.shape) if t.numel() == n else None


def _state_compare(got: torch.Tensor, ref: torch.Tensor, tol: float, label: str) -> correctness.Comparison:
    """A floating state tensor against the reference's: NaN and Inf position by position, every other element within
    ``tol`` x (1 + |reference|). Elementwise only: a statistic whose exact value is ~0 (the running mean of a
    BatchNorm fed by another norm's output: 3.5e-16 in float64 on KernelBench level-3 20) is rounding noise on both
    sides (1e-8 and 3e-8 from float64), and a more accurate kernel's running variance (NetVLAD, 46) lands 1e-5 from
    float32 PyTorch's; the output rules' norm-wise float32 bound refused both honest kernels."""
    if got.shape != ref.shape:
        return correctness.Comparison(False, f"{label}: shape {tuple(got.shape)}, expected {tuple(ref.shape)}")
    g, r = got.double().reshape(-1), ref.double().reshape(-1)
    fin = torch.isfinite(r)
    same_nonfinite = torch.where(fin, torch.isfinite(g), (g == r) | (torch.isnan(g) & torch.isnan(r)))
    err = torch.where(fin & torch.isfinite(g), (g - r).abs(), torch.zeros_like(r))
    bad = ~same_nonfinite | (err > tol * (1.0 + r.abs()))
    if not bool(bad.any()):
        return correctness.Comparison(True)
    i = int(bad.nonzero()[0])
    return correctness.Comparison(False, f"{label}: {int(bad.sum())} of {r.numel()} elements differ by more than "
                                  f"{tol:g} x (1 + |expected|); first at flat index {i}: expected {r[i].item():.6g}, "
                                  f"got {g[i].item():.6g}", max_abs_err=float(err.max()))


def _eps(dtype: torch.dtype) -> float:
    return torch.finfo(dtype).eps


class StateJudge:
    """Judges ModelNew's state against Model's for one verdict (rebuilt models: `baseline` again)."""

    def __init__(self, tol: float):
        self.tol = tol
        self.built: dict[str, tuple[Entry, torch.Tensor]] = {}  # the candidate's tensors right after construction
        self.reserve = 0  # bytes the candidate's state takes in its region

    def limit(self, ref_state_bytes: int) -> int:
        return STATE_FACTOR * ref_state_bytes + SLACK_BYTES

    def baseline(self, handle: Any, entries: Any) -> None:
        """The candidate's state right after construction (a private copy of every tensor's bytes)."""
        parsed = parse(entries, handle.capacity, "candidate")
        self.built = {}
        for name, e in parsed.items():
            assert e.meta is not None  # parse: a candidate's entries carry their tensors
            self.built[name] = (e, _bytes(handle, e.meta).clone())
        self.reserve = sum(align(e.meta.nbytes) for e, _ in self.built.values() if e.meta is not None)

    def reference(self, handle: Any, entries: Any) -> dict[str, tuple[Entry, torch.Tensor | None]]:
        """The reference's state entries with private copies of the tensors its calls changed (read at once: the
        region is written again by later requests)."""
        parsed = parse(entries, handle.capacity, "reference")
        out: dict[str, tuple[Entry, torch.Tensor | None]] = {}
        for name, e in parsed.items():
            value = None
            if e.changed and e.meta is not None:
                value = _typed(handle, e)
                if value is None:
                    value = _bytes(handle, e.meta).clone()
            out[name] = (e, value)
        return out

    def check(self, label: str, ref: dict[str, tuple[Entry, torch.Tensor | None]], handle: Any,
              entries: Any, values: bool = True) -> None:
        """Raise `Fail` unless the candidate's state (``entries`` in its region) follows the rule above. Without
        ``values`` the tensors Model's calls changed are checked by name and shape only (a call on planted large
        values: a running mean over a batch holding 1e10 is each side's rounding, 5% apart on KernelBench level-3
        19's first BatchNorm, with no float64 opinion to ask; and after the timed rounds, some of which plant them)."""
        cand = parse(entries, handle.capacity, "candidate")
        for name, (r, value) in ref.items():  # what Model's calls changed: ModelNew must hold the same
            if r.changed:
                self._matches(label, r, value if values else None, cand.get(name), handle)
        for name, c in cand.items():  # everything else: as built
            r_entry = ref.get(name, (None, None))[0]
            if r_entry is not None and r_entry.changed:
                continue
            self._unchanged(label, c, r_entry, handle)
        for name, (e, _) in self.built.items():
            if name not in cand and not (name in ref and ref[name][0].changed):
                raise Fail("correctness", f"{label}: after forward, ModelNew no longer has its {e.describe()}; {RULE}")

    def _unchanged(self, label: str, c: Entry, r: Entry | None, handle: Any) -> None:
        built = self.built.get(c.name)
        where = f"{label}: forward changed ModelNew's {c.kind} {c.name}"
        unchanged = ("Model's forward leaves its tensor of that name unchanged" if r is not None else
                     "Model has no tensor of that name")
        if built is None:
            raise Fail("correctness", f"{where}: it did not exist after construction ({unchanged}); {RULE}")
        e0, bits0 = built
        if c.meta is None or c.shape != e0.shape or c.dtype != e0.dtype or c.meta.nbytes != e0.meta.nbytes:
            raise Fail("correctness", f"{where}: after construction it was {e0.dtype}{list(e0.shape)}, now "
                       f"{c.dtype}{list(c.shape)} ({unchanged}); {RULE}")
        now = _bytes(handle, c.meta)
        if now.dtype != bits0.dtype:
            now = now.view(torch.uint8)
            bits0 = bits0.view(torch.uint8)
        if torch.equal(now, bits0):
            return
        size = regions.DTYPES[c.meta.dtype].itemsize if c.meta.dtype in regions.DTYPES else 1
        a = now.view(torch.uint8).reshape(-1, size)
        b = bits0.view(torch.uint8).reshape(-1, size)
        differ = int((a != b).any(dim=1).sum())
        raise Fail("correctness", f"{where} ({differ} of {a.shape[0]} elements differ from the values it held after "
                   f"construction; {unchanged}); {RULE}")

    def _matches(self, label: str, r: Entry, ref_value: torch.Tensor | None, c: Entry | None, handle: Any) -> None:
        updates = (f"Model's forward updates its {r.describe()} (a training-mode norm's running statistics, a "
                   "counter)")
        if c is None:
            raise Fail("correctness", f"{label}: {updates}, but ModelNew has no parameter or buffer of that name; "
                       f"ModelNew must hold it under the same name and shape and update it as Model's forward does")
        if c.shape != r.shape:
            raise Fail("correctness", f"{label}: {updates}, but ModelNew's {c.kind} {c.name} has shape "
                       f"{list(c.shape)}; ModelNew must hold it under the same name and shape and update it as "
                       "Model's forward does")
        if ref_value is None:  # by name and shape only (`check` without values)
            return
        assert c.meta is not None
        where = f"{label}: after forward, ModelNew's {c.kind} {c.name} is not what Model's forward leaves in it"
        got = _typed(handle, c)
        if got is None or r.dtype not in regions.DTYPES:  # a dtype the codec does not carry: its bytes
            same = c.dtype == r.dtype and torch.equal(_bytes(handle, c.meta).view(torch.uint8).reshape(-1),
                                                      ref_value.reshape(-1).view(torch.uint8))
            if not same:
                raise Fail("correctness", f"{where} ({c.dtype}; compared byte for byte); {updates}, and ModelNew's "
                           "forward must update it the same way")
            return
        if got.is_floating_point() != ref_value.is_floating_point():
            raise Fail("correctness", f"{where}: it is {c.dtype}, Model's is {r.dtype}; {updates}, and ModelNew's "
                       "forward must update it the same way")
        if ref_value.is_floating_point():  # judged in the coarser of the two dtypes, elementwise (`_state_compare`)
            coarse = ref_value.dtype if _eps(ref_value.dtype) >= _eps(got.dtype) else got.dtype
            cmp = _state_compare(got.to(coarse), ref_value.to(coarse), max(self.tol, 4 * _eps(coarse)),
                                 f"{c.kind} {c.name}")
        else:
            cmp = correctness.compare(got.to(torch.int64), ref_value.to(torch.int64), [], self.tol,
                                      f"{c.kind} {c.name}")
        if not cmp.ok:
            raise Fail("correctness", f"{where}: {cmp.message}\n{updates}, and ModelNew's forward must update it "
                       "the same way", max_abs_err=cmp.max_abs_err, max_rel_err=cmp.max_rel_err)
