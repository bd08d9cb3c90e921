#pragma once
// allOf: the schemas merged into one that a grammar can express (object properties united,
// types, enums and bounds intersected). A combination the merge cannot express exactly is
// refused with a GrammarError rather than loosened.
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace lumen::grammar {

using OrderedJson = nlohmann::ordered_json;

// Finds the schema a "$ref" points to; `pointer` locates the referring schema (for errors).
using RefResolver = std::function<const OrderedJson&(const std::string& ref, const std::string& pointer)>;

// The keywords that only annotate (skipped when merging, and when deciding whether a schema
// beside $ref/anyOf adds constraints).
bool is_annotation_keyword(const std::string& keyword);

// One schema equivalent to all of `schemas` (each may use $ref and nested allOf, resolved
// through `resolve`). `pointer` names the allOf for errors.
OrderedJson merge_all_of(const OrderedJson& schemas, const std::string& pointer, const RefResolver& resolve);

}  // namespace lumen::grammar
