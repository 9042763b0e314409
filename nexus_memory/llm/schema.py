"""A small JSON Schema checker for the documents LLM operations ask for.

It covers the keywords our schemas use (type, properties, required, additionalProperties, items,
enum, minimum, maximum, minLength, maxLength, minItems, maxItems, pattern) and says where a
document is wrong in words a model can act on. A keyword it does not know is ignored.
"""

from __future__ import annotations

import re
from typing import Any

MAX_ERRORS = 5  # enough to fix a document; more only makes the retry prompt longer

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}


def schema_errors(document: Any, schema: dict[str, Any]) -> list[str]:
    """Where `document` breaks `schema` ('$.facts[2].text: expected string'); empty when it fits."""
    errors: list[str] = []
    _check(document, schema, "$", errors)
    return errors[:MAX_ERRORS]


def _is_type(value: Any, name: str) -> bool:
    if isinstance(value, bool) and name in ("integer", "number"):
        return False  # JSON booleans are not numbers, though Python's are ints
    if name == "integer" and isinstance(value, float):
        return value.is_integer()
    return isinstance(value, _TYPES.get(name, (object,)))


def _check(value: Any, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if len(errors) >= MAX_ERRORS:
        return
    expected = schema.get("type")
    if expected is not None:
        names = expected if isinstance(expected, list) else [expected]
        if not any(_is_type(value, n) for n in names):
            errors.append(f"{path}: expected {' or '.join(names)}, got {type(value).__name__}")
            return
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{path}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        _check_string(value, schema, path, errors)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{path}: {value} is below {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{path}: {value} is above {schema['maximum']}")
    elif isinstance(value, list):
        _check_array(value, schema, path, errors)
    elif isinstance(value, dict):
        _check_object(value, schema, path, errors)


def _check_string(value: str, schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if len(value) < schema.get("minLength", 0):
        errors.append(f"{path}: shorter than {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        errors.append(f"{path}: longer than {schema['maxLength']} characters")
    if "pattern" in schema and not re.search(schema["pattern"], value):
        errors.append(f"{path}: {value[:40]!r} does not match {schema['pattern']}")


def _check_array(value: list[Any], schema: dict[str, Any], path: str, errors: list[str]) -> None:
    if len(value) < schema.get("minItems", 0):
        errors.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        errors.append(f"{path}: more than {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", errors)


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, errors: list[str]) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{path}: missing {key!r}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            errors.append(f"{path}: unexpected {', '.join(map(repr, extra))}")
    for key, sub in properties.items():
        if key in value:
            _check(value[key], sub, f"{path}.{key}", errors)
