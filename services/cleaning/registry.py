"""Step registry: name -> class, parameter schemas, and building steps from specs."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from services.cleaning.deadloop import DeadLoopFilter
from services.cleaning.hard import HardFilter
from services.cleaning.intent import IntentClassifier
from services.cleaning.model_filter import ModelFilter
from services.cleaning.normalizer import MessageNormalizer
from services.cleaning.params import ParamStep
from services.cleaning.refuse import RefuseFilter
from services.cleaning.sanity import MessageSanityFilter
from services.cleaning.score import ScoreFilter
from services.cleaning.soup import TokenSoupFilter
from services.cleaning.template_fit import TemplateFitnessFilter
from shared.errors import InvalidInput

__all__ = ["STEP_REGISTRY", "StepInfo", "StepSpec", "build_pipeline", "build_step",
           "describe_steps", "register_step"]

STEP_REGISTRY: dict[str, type[ParamStep[Any]]] = {}


def register_step(cls: type[ParamStep[Any]]) -> type[ParamStep[Any]]:
    """Add a step class to the registry under its ``name`` (usable as a decorator)."""
    STEP_REGISTRY[cls.name] = cls
    return cls


for _cls in (MessageNormalizer, MessageSanityFilter, HardFilter, DeadLoopFilter, RefuseFilter,
             TokenSoupFilter, ModelFilter, IntentClassifier, ScoreFilter, TemplateFitnessFilter):
    register_step(_cls)


class StepSpec(BaseModel):
    """A step as configuration: ``{"name": "HardFilter", "params": {...}}``."""

    model_config = ConfigDict(extra="forbid")

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class StepInfo(BaseModel):
    """A registered step: its name, one-line description and parameter JSON schema."""

    name: str
    description: str
    params_schema: dict[str, Any]


def describe_steps() -> list[StepInfo]:
    """Every registered step with its parameter schema (for ``GET /v1/filters``)."""
    return [
        StepInfo(name=name, description=(cls.__doc__ or "").strip().splitlines()[0],
                 params_schema=cls.Params.model_json_schema())
        for name, cls in sorted(STEP_REGISTRY.items())
    ]


def build_step(spec: StepSpec | dict[str, Any]) -> ParamStep[Any]:
    """A step built from a spec; InvalidInput on unknown names or bad parameters."""
    if not isinstance(spec, StepSpec):
        try:
            spec = StepSpec.model_validate(spec)
        except ValidationError as exc:
            raise InvalidInput(f"Bad step spec: {exc.errors(include_url=False)[0]['msg']}.",
                               param="pipeline") from None
    cls = STEP_REGISTRY.get(spec.name)
    if cls is None:
        known = ", ".join(sorted(STEP_REGISTRY))
        raise InvalidInput(f"Unknown cleaning step {spec.name!r}; known steps: {known}.", param="name")
    return cls(**spec.params)


def build_pipeline(specs: list[StepSpec | dict[str, Any]]) -> list[ParamStep[Any]]:
    """Steps built from a list of specs, in order."""
    return [build_step(s) for s in specs]
