"""One module per graph node (retrieve, q_filter, generate, verify, update, select_start).

Built in step 2 (issue 3).
"""
