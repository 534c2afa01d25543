"""The value-driven memory (Chroma store, Q1/Q2 values, retrieval policies, seed knowledge).

In place: `values` (paper Eq. 4-6: rewards, r2 normalisation, bounded Q updates, the update ledger) and
`retrieval` (the selection policies value/similarity/random/none over a similarity pool; ε and λ schedules).
The Chroma store, embeddings and seed knowledge arrive with the rest of step 2 (issue 3).
"""
