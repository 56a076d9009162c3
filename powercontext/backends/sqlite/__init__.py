"""The SQLite adapter: apsw with FTS5 and sqlite-vec, one database file per Memory.

Owns only what differs on SQLite; every shared rule stays in ``powercontext.backends``.
"""
