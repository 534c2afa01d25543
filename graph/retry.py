"""Node retries (LangGraph's RetryPolicy) for the failures that pass by themselves.

The nodes that read or write the shared memory (retrieve, q_filter, update) talk to a Chroma server and,
on a cluster, to the value ledger's owner actor: a connection reset, a timeout or a server restarting
is over in a moment, and the node can simply run again (the ledger and the run log apply an attempt
once, by its id, and items are upserted). Everything else (a bad task, a broken store, our own bugs) is
not retried: it stops the run with its message, and ``evokernel run --resume`` continues after a fix.
generate and verify keep their own retries (the LLM endpoint's, the verifier pool's).
"""
from __future__ import annotations

from langgraph.types import RetryPolicy

__all__ = ["STORE_RETRY", "transient"]


def transient(exc: BaseException) -> bool:
    """A failure worth running the node again for: the network or a peer restarting."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    try:
        import httpx

        if isinstance(exc, (httpx.TransportError, httpx.RemoteProtocolError)):
            return True
    except ImportError:  # pragma: no cover - httpx comes with langchain-openai and chromadb
        pass
    name = type(exc).__name__
    # Ray: the ledger owner actor restarting (it restarts with retries, memory/value_service.py)
    return name in {"RayActorError", "ActorUnavailableError", "GetTimeoutError"}


STORE_RETRY = RetryPolicy(max_attempts=4, initial_interval=0.5, backoff_factor=2.0, max_interval=8.0,
                          retry_on=transient)
