"""The tools tests use the sandbox's small real pool (``tests.shared.sandbox.conftest``)."""

from tests.shared.sandbox.conftest import pool, small_limits  # noqa: F401 - shared fixture and helper
