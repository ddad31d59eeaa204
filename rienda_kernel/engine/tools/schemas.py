"""The JSON Schema of a tool's arguments (its ``parameters``): checked whole at load,
applied at each call.

- :func:`schema_problems` is the load-time check: the schema is valid for its dialect,
  describes an object, and every ``$ref`` in it resolves (within the schema, or to a JSON
  Schema meta-schema) to a schema, not to a chain of ``$ref`` that comes back to itself.
  Nothing is fetched over the network, here or at call time.
- :func:`arguments_problem` is the call-time check; it never raises: whatever goes wrong
  while validating is a message, so a call can at worst get an error result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..common import imports
from ..common.json_value import JSON, JSONObject

if TYPE_CHECKING:
    from referencing import Registry, Resource
    from referencing._core import Resolved, Resolver  # public only as what Registry's methods return
    from referencing.jsonschema import Schema

__all__ = ["arguments_problem", "schema_problems"]


def schema_problems(parameters: JSON) -> list[str]:
    """What makes ``parameters`` unusable as the schema of a tool's arguments (empty: usable)."""
    imports.jsonschema()  # here, not at import: its import is slow (and takes the extras Rienda never uses)
    import jsonschema  # the module imports.jsonschema() imported

    try:
        jsonschema.validators.validator_for(parameters).check_schema(parameters)
    except jsonschema.SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(top)"
        return [f"'parameters' is not a valid JSON Schema at {where}: {exc.message}"]
    if parameters.get("type") != "object":
        return ["'parameters' must describe an object (type: \"object\"), since arguments are a JSON object"]
    return [f"'parameters' has a $ref that cannot be resolved: {ref!r} ({why})"
            for ref, why in _unresolved_refs(parameters)]


def arguments_problem(parameters: JSONObject, arguments: JSONObject) -> str | None:
    """Why ``arguments`` do not match ``parameters`` (the best match, naming the field), or
    None when they do. Never raises."""
    imports.jsonschema()
    import jsonschema  # the module imports.jsonschema() imported

    registry = _meta_schemas()
    try:
        validator = jsonschema.validators.validator_for(parameters)(parameters, registry=registry)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except Exception as exc:  # noqa: BLE001 - a schema that breaks validation must not end the run
        return f"the tool's parameters schema cannot be applied: {_first_line(exc)}"
    if error is None:
        return None
    field = "/".join(str(p) for p in error.absolute_path)
    return f"{f'field {field!r}' if field else 'arguments'}: {error.message}"


def _unresolved_refs(schema: JSONObject) -> list[tuple[str, str]]:
    """Each ``$ref`` of ``schema`` (in any subschema) that does not resolve, and why."""
    from referencing.jsonschema import DRAFT202012, specification_with

    root = specification_with(schema.get("$schema", ""), default=DRAFT202012).create_resource(schema)
    unresolved: list[tuple[str, str]] = []

    def visit(resource: Resource[Schema], resolver: Resolver[Schema]) -> None:
        ref = resource.contents.get("$ref") if isinstance(resource.contents, dict) else None
        if isinstance(ref, str):
            try:
                if _comes_back(resolver.lookup(ref)):
                    unresolved.append((ref, "it leads back to itself through $ref alone"))
            except Exception as exc:  # noqa: BLE001 - any failure to resolve is the finding
                unresolved.append((ref, _first_line(exc)))
        for subresource in resource.subresources():
            visit(subresource, resolver.in_subresource(subresource))

    visit(root, _meta_schemas().resolver_with_root(root))
    return unresolved


def _meta_schemas() -> Registry[Schema]:
    """The JSON Schema meta-schemas (a ``$ref`` may name one), imported on first use."""
    from jsonschema_specifications import REGISTRY  # type: ignore[import-untyped]  # it ships no types

    registry: Registry[Schema] = REGISTRY
    return registry


def _comes_back(resolved: Resolved[Schema]) -> bool:
    """Whether following ``$ref`` from ``resolved`` returns to a schema already passed."""
    seen: set[int] = set()
    while isinstance(resolved.contents, dict) and isinstance(resolved.contents.get("$ref"), str):
        if id(resolved.contents) in seen:
            return True
        seen.add(id(resolved.contents))
        resolved = resolved.resolver.lookup(resolved.contents["$ref"])
    return False


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
