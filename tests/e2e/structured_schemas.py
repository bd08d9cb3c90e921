"""The JSON schemas the structured-output checks sample against: nested objects, bounded
arrays, enums, $refs (one recursive), patterns, formats, integer ranges, anyOf. Shared by
test_structured_output.py and scripts/check_structured_output.py."""

SCHEMAS = {
    "person": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "maxLength": 20},
            "age": {"type": "integer", "minimum": 0, "maximum": 120},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"enum": ["admin", "user", "guest"]}, "maxItems": 3},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    },
    "nested": {
        "type": "object",
        "properties": {
            "order": {"type": "object",
                      "properties": {"id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4}$"},
                                     "total": {"type": "number"},
                                     "paid": {"type": "boolean"}},
                      "required": ["id", "total", "paid"], "additionalProperties": False},
            "items": {"type": "array", "minItems": 1, "maxItems": 4,
                      "items": {"$ref": "#/$defs/item"}},
        },
        "required": ["order", "items"],
        "additionalProperties": False,
        "$defs": {"item": {"type": "object",
                           "properties": {"sku": {"type": "string", "minLength": 1, "maxLength": 8},
                                          "qty": {"type": "integer", "exclusiveMinimum": 0, "maximum": 99}},
                           "required": ["sku", "qty"], "additionalProperties": False}},
    },
    "tree": {
        "$ref": "#/$defs/node",
        "$defs": {"node": {"type": "object",
                           "properties": {"value": {"type": "integer"},
                                          "children": {"type": "array", "maxItems": 2,
                                                       "items": {"$ref": "#/$defs/node"}}},
                           "required": ["value"], "additionalProperties": False}},
    },
    "choice_of_shapes": {
        "anyOf": [
            {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
             "required": ["kind", "r"], "additionalProperties": False},
            {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "integer"},
                                              "h": {"type": "integer"}},
             "required": ["kind", "w", "h"], "additionalProperties": False},
        ]
    },
    "dates": {
        "type": "object",
        "properties": {"day": {"type": "string", "format": "date"},
                       "id": {"type": "string", "format": "uuid"}},
        "required": ["day", "id"], "additionalProperties": False,
    },
}
