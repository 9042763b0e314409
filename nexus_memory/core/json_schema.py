"""Validation against the JSON-schema subset our tool and answer schemas use (type or a list of types,
enum, required, additionalProperties, items, maxItems, min/max length, minimum/maximum), with messages
a model can act on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nexus_memory.core.textcheck import show, unicode_problem, visible

_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


def validate(schema: dict[str, Any], value: Any, path: str = "arguments") -> list[str]:
    """Errors of `value` against the JSON-schema subset our tools use (empty when valid)."""
    expected = schema.get("type")
    if expected:
        names = [expected] if isinstance(expected, str) else list(expected)  # a list: any of these types
        if not any(_TYPES[name](value) for name in names):
            wanted = " or ".join(names)
            return [f"{path} must be {'an' if wanted[0] in 'aeiou' else 'a'} {wanted}, got {type(value).__name__}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path} must be one of {schema['enum']}, got {show(value)}")
    if isinstance(value, str):
        if len(value.strip()) < schema.get("minLength", 0) or (schema.get("minLength") and not visible(value)):
            errors.append(f"{path} must not be empty")
        if len(value) > schema.get("maxLength", len(value)):
            errors.append(f"{path} is longer than {schema['maxLength']} characters")
        elif problem := unicode_problem(value):  # SQLite cannot store or match a lone surrogate
            errors.append(f"{path} {problem}")
    if isinstance(value, list) and len(value) > schema.get("maxItems", len(value)):
        errors.append(f"{path} has more than {schema['maxItems']} items")
        return errors
    if isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path} must be >= {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path} must be <= {schema['maximum']}")
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            errors += validate(schema["items"], item, f"{path}[{i}]")
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        errors += [f"missing required argument {key!r}" for key in schema.get("required", []) if key not in value]
        if schema.get("additionalProperties") is False:
            errors += [
                f"unknown argument {show(key)} (allowed: {sorted(properties)})"
                for key in value
                if key not in properties
            ]
        for key, item in value.items():
            if key in properties:
                errors += validate(properties[key], item, key)
    return errors
