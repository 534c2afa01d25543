"""memory/chroma.py: Chroma's read-during-first-write race is ridden out, real errors are not hidden."""
import os
import threading
import time

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from chromadb.errors import InternalError  # noqa: E402

from evokernel.memory.chroma import ChromaCollection, MemoryStoreError, is_transient  # noqa: E402
from evokernel.memory.embeddings import DIM, HashEmbedder  # noqa: E402
from evokernel.memory.store import MemoryStore  # noqa: E402

RACE = "Error executing plan: Internal error: Error creating hnsw segment reader: Nothing found on disk"


class Flaky:
    """A collection whose ``get`` fails with ``error`` the first ``times`` calls."""

    name = "flaky"

    def __init__(self, error, times):
        self.error, self.times, self.calls = error, times, 0

    def get(self, **kwargs):
        self.calls += 1
        if self.calls <= self.times:
            raise self.error
        return {"ids": ["a"], "kwargs": kwargs}


def test_the_race_is_retried_until_it_is_gone():
    col = ChromaCollection(Flaky(InternalError(RACE), 3))
    assert col.get(limit=5) == {"ids": ["a"], "kwargs": {"limit": 5}}
    assert col._col.calls == 4 and col.retries == 3


def test_an_error_that_outlasts_the_patience_names_the_collection():
    col = ChromaCollection(Flaky(InternalError(RACE), 10 ** 9), patience=0.3)
    t0 = time.monotonic()
    with pytest.raises(MemoryStoreError, match="'flaky'.*restart the Chroma server"):
        col.get()
    assert 0.25 < time.monotonic() - t0 < 3


@pytest.mark.parametrize("error", [InternalError("Error executing plan: Error loading hnsw index"),
                                   ValueError("Expected embeddings to be a list"), ConnectionError("refused")])
def test_other_errors_are_raised_at_once(error):
    col = ChromaCollection(Flaky(error, 1))
    with pytest.raises(type(error)):
        col.get()
    assert col._col.calls == 1 and col.retries == 0
    assert not is_transient(error)


def test_only_the_collection_calls_are_wrapped():
    col = ChromaCollection(Flaky(None, 0))
    assert col.name == "flaky"
    with pytest.raises(AttributeError):
        col.modify  # noqa: B018  (not a call the store makes)


def test_a_store_holds_the_wrapped_collection(tmp_path):
    with MemoryStore(tmp_path / "m", embedder=HashEmbedder()) as s:
        assert isinstance(s._col, ChromaCollection)


def test_reads_during_another_clients_first_write_on_a_real_server(chroma_server):
    """Chroma 1.5: a read while another client's first write builds a collection's vector index fails.
    Each trial is a new collection; a raw handle and a wrapped one read in a loop while a second client
    writes the first item. The raw handle shows the race is real here; the wrapped one never fails."""
    import chromadb
    from chromadb.config import Settings

    host, port = chroma_server.removeprefix("http://").split(":")

    def handle(name):
        client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
        return client.get_or_create_collection(name, embedding_function=None,
                                               configuration={"hnsw": {"space": "cosine"}})

    raw_errors, wrapped_errors, trials = [], [], 0
    while len(raw_errors) < 3 and trials < 40:
        name = f"race{trials}"
        trials += 1
        raw, wrapped, writer = handle(name), ChromaCollection(handle(name)), handle(name)
        stop = threading.Event()

        def read(col, errors):
            while not stop.is_set():
                try:
                    col.get(offset=0, limit=100, include=["embeddings", "metadatas"])
                except Exception as e:  # noqa: BLE001 - every failure is the finding
                    errors.append(e)

        readers = [threading.Thread(target=read, args=(raw, raw_errors)),
                   threading.Thread(target=read, args=(wrapped, wrapped_errors))]
        for t in readers:
            t.start()
        time.sleep(0.02)
        writer.upsert(ids=["x0"], embeddings=np.ones((1, DIM)).tolist(), documents=["x"], metadatas=[{"k": 1}])
        time.sleep(0.1)
        stop.set()
        for t in readers:
            t.join()
        assert wrapped.count() == 1
    assert not wrapped_errors, wrapped_errors[:3]
    if not raw_errors:
        pytest.skip(f"this Chroma did not show the race in {trials} trials (fixed upstream?)")
    assert all(is_transient(e) for e in raw_errors), raw_errors[:3]
