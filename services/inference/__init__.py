"""Local CPU inference engine speaking the vLLM OpenAI subset, and the inference backends.

Importing this package loads nothing heavy: torch and transformers are imported
when a model is loaded. Public entry points live in their modules:
``services.inference.routes`` (routers), ``services.inference.engine`` (``Engine``),
``services.inference.backends`` (the registry with ``local``, this engine; the
protocol and the policy-server backends are ``shared.backends``).
"""

__all__: list[str] = []
