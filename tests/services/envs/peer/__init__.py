"""Scripts run inside the separate openenv-core virtual environment (not collected as tests)."""

__all__: list[str] = []
