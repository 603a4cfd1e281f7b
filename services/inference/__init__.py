"""Local CPU inference engine speaking the vLLM OpenAI subset, and the inference backends.

Importing this package loads nothing heavy: torch and transformers are imported
when a model is loaded. Public entry points live in their modules:
``services.inference.routes`` (routers), ``services.inference.engine`` (``Engine``),
``services.inference.backends`` (``InferenceBackend``, ``InferBackendRegistry``).
"""

__all__: list[str] = []
