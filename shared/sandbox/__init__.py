"""The sandbox: bubblewrap slots behind an asyncio pool, with cgroup, seccomp and tmpfs limits.

Shared code because two services run programs in it: the tools service (its
``python`` and ``bash`` tools) and the envs service (the ``code`` env). Both
build their pool with ``shared.sandbox.pool.SandboxPool.from_settings``, so
one profile and one set of limits hold everywhere.
"""
