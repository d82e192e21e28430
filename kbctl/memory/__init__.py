"""Two-tier agent memory: scope and path rules, the MemoryBackend protocol (also named
MemoryStore), the Postgres and
composite backends, ranking (MMR, decay), the flush policy and the append guard.

Operations with settings resolution live in ``kbctl.memory.api``.

This package imports none of its modules: a user imports the one it needs, and loads
nothing else.
"""
