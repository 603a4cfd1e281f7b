"""Rollout-specific errors, all inside the shared tree (``shared.errors``)."""

from __future__ import annotations

from shared.errors import InvalidInput, UpstreamError

__all__ = ["PolicyOutputInvalid", "ProcessorLoadError", "TemplateNotAppendOnly"]


class TemplateNotAppendOnly(InvalidInput):
    """The chat template re-renders history, so a token bridge cannot be cut from it."""

    code = "template_not_append_only"
    title = "Chat template is not append-only"


class ProcessorLoadError(InvalidInput):
    """A rollout processor classpath could not be imported or is not a processor."""

    code = "processor_load_failed"
    title = "Rollout processor could not be loaded"


class PolicyOutputInvalid(UpstreamError):
    """The policy answered, but the answer breaks the port contract (e.g. logprob count)."""

    code = "policy_output_invalid"
    title = "Policy output invalid"
