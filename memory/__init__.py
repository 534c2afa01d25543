"""The value-driven memory (Chroma store, Q1/Q2 values, retrieval policies, seed knowledge).

Built in step 2 (issue 3).
"""
