"""The LangGraph StateGraphs of EvoKernel (drafting and refining subgraphs, the task stream).

Built in step 2 (issue 3); this package is laid down now so the import namespace is complete.
"""
