"""Parameters of a step as a pydantic model: one mechanism for validation and schemas.

Every configurable step declares ``Params`` (a ``StepParams`` subclass). The
constructor validates keyword arguments against it, and the registry publishes
``Params.model_json_schema()``, so what ``GET /v1/filters`` shows is exactly what
the constructor accepts.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from services.cleaning.base import Step
from shared.errors import InvalidInput

__all__ = ["ParamStep", "StepParams"]


class StepParams(BaseModel):
    """Base of every step's parameter model: unknown names are errors, aliases allowed."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True,
                              arbitrary_types_allowed=True)


def _explain(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "params"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)


P = TypeVar("P", bound="StepParams")


class ParamStep(Step, Generic[P]):
    """A step configured by keyword arguments validated against its ``Params`` model.

    Subclasses name their model twice, as ``ParamStep[XParams]`` (so ``self.params``
    is typed) and as ``Params = XParams`` (the class that validates at runtime).
    """

    Params: ClassVar[type[StepParams]] = StepParams
    params: P

    def __init__(self, **params: Any) -> None:
        try:
            # Params is the runtime twin of P; a class variable cannot carry the type variable.
            self.params = cast(P, self.Params(**params))
        except ValidationError as exc:
            raise InvalidInput(
                f"Bad parameters for {self.name}: {_explain(exc)}.",
                param=self.name, details={"errors": exc.errors(include_url=False)},
            ) from None
