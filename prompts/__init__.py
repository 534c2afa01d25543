"""Prompt templates as files (drafting/refining per backend) and their renderer.

Built in step 2 (issue 3).
"""
