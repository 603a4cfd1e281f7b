"""Functions-service errors, derived from the shared error tree."""

from __future__ import annotations

from shared.errors import Conflict, InvalidInput, NotFound, ValidationFailed

__all__ = ["ComponentLoadError", "PackageInvalid", "PackageNotFound", "PackageNotReady"]


class PackageInvalid(InvalidInput):
    """An upload that is not a usable workspace zip (not a zip, unsafe paths, no ``functions/``)."""

    code = "invalid_package"


class PackageNotFound(NotFound):
    """No package has this id."""

    code = "package_not_found"


class PackageNotReady(Conflict):
    """The package is still building, or its build failed (the detail says which and why)."""

    code = "package_not_ready"


class ComponentLoadError(ValidationFailed):
    """The component's classpath does not load in its package (missing class, import error in setup)."""

    code = "component_load_failed"
