"""The managed local model (`--model local:NAME`, docs/local-model.md): the registry of GGUF models, fetching
and verifying their weights (models.py), and the llama.cpp server that serves them on 127.0.0.1 (server.py)."""
