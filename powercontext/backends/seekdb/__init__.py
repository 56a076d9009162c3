"""A local OceanBase-kernel server from the pylibseekdb wheel: its process, store and URLs.

No SQL lives here; ``python -m powercontext.backends.seekdb`` (``__main__``) is its command line.
"""
