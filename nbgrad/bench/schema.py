"""The JSON document ``nbgrad-bench --json FILE`` writes: its JSON Schema (draft 2020-12,
reproduced in docs/benchmarks.md) and a small validator for the subset of JSON Schema it uses,
so that checking a file needs no extra package (``jsonschema`` gives the same answers)."""

import json

__all__ = ["SCHEMA", "SCHEMA_ID", "validate", "ValidationError"]

SCHEMA_ID = "nbgrad-bench/1"

_STATS = {
    "type": "object",
    "required": ["median", "min", "max", "values"],
    "properties": {
        "median": {"type": "number"},
        "min": {"type": "number"},
        "max": {"type": "number"},
        "values": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        "number": {
            "type": "object",
            "additionalProperties": {"type": "integer", "minimum": 1},
        },
    },
    "additionalProperties": False,
}

_STR_OR_NULL = {"type": ["string", "null"]}
_INT_OR_NULL = {"type": ["integer", "null"]}

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "nbgrad-bench results",
    "type": "object",
    "required": ["schema", "created", "command", "machine", "settings", "workloads"],
    "additionalProperties": False,
    "properties": {
        "schema": {"const": SCHEMA_ID},
        "created": {"type": "string"},
        "command": {"type": "array", "items": {"type": "string"}},
        "machine": {
            "type": "object",
            "required": ["cpu", "logical_cpus", "available_cpus", "platform", "python"]
            + ["versions", "blas", "threads"],
            "additionalProperties": False,
            "properties": {
                "cpu": {"type": "string"},
                "logical_cpus": _INT_OR_NULL,
                "available_cpus": _INT_OR_NULL,
                "platform": {"type": "string"},
                "python": {"type": "string"},
                "versions": {
                    "type": "object",
                    "required": ["nbgrad", "numpy", "numba", "torch"],
                    "additionalProperties": _STR_OR_NULL,
                },
                "blas": _STR_OR_NULL,
                "threads": {
                    "type": "object",
                    "required": ["requested", "numba", "torch", "blas", "how"],
                    "additionalProperties": False,
                    "properties": {
                        "requested": _INT_OR_NULL,
                        "numba": {"type": "integer"},
                        "torch": _INT_OR_NULL,
                        "blas": _INT_OR_NULL,
                        "how": {"type": "array", "items": {"type": "string"}},
                    },
                },
            },
        },
        "settings": {
            "type": "object",
            "required": ["quick", "repeat", "target_s", "clock", "compare", "patterns"],
            "additionalProperties": False,
            "properties": {
                "quick": {"type": "boolean"},
                "repeat": {"type": "integer", "minimum": 1},
                "target_s": {"type": "number"},
                "clock": {"enum": ["wall", "thread"]},
                "compare": {"type": "array", "items": {"enum": ["torch", "numpy"]}},
                "patterns": {"type": "array", "items": {"type": "string"}},
            },
        },
        "workloads": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "title", "group", "unit", "status", "reason"]
                + ["results", "ratios", "skipped"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "group": {"type": "string"},
                    "unit": {"enum": ["s", "ms", "us"]},
                    "status": {"enum": ["ok", "skipped", "error"]},
                    "reason": _STR_OR_NULL,
                    "results": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"nbgrad": _STATS, "torch": _STATS, "numpy": _STATS},
                    },
                    "ratios": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {"torch": _STATS, "numpy": _STATS},
                    },
                    "skipped": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                    },
                },
            },
        },
    },
}


class ValidationError(ValueError):
    pass


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _check(value, schema, path):
    where = path or "(document)"
    if "const" in schema and value != schema["const"]:
        raise ValidationError("%s: expected %r, got %r" % (where, schema["const"], value))
    if "enum" in schema and value not in schema["enum"]:
        raise ValidationError("%s: %r is not one of %r" % (where, value, schema["enum"]))
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            raise ValidationError("%s: expected %s, got %r" % (where, " or ".join(types), value))
    if "minimum" in schema and value < schema["minimum"]:
        raise ValidationError("%s: %r < %r" % (where, value, schema["minimum"]))
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            raise ValidationError("%s: fewer than %d items" % (where, schema["minItems"]))
        for i, item in enumerate(value):
            if "items" in schema:
                _check(item, schema["items"], "%s[%d]" % (path, i))
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                raise ValidationError("%s: missing %r" % (where, key))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            sub = "%s.%s" % (path, key) if path else key
            if key in props:
                _check(item, props[key], sub)
            elif extra is False:
                raise ValidationError("%s: unexpected property %r" % (where, key))
            elif isinstance(extra, dict):
                _check(item, extra, sub)


def validate(doc):
    """Raise ``ValidationError`` (saying where) unless ``doc`` (a dict, or JSON text) matches
    ``SCHEMA``."""
    if isinstance(doc, str):
        doc = json.loads(doc)
    _check(doc, SCHEMA, "")
    return doc
