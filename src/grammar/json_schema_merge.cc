#include "grammar/json_schema_merge.h"

#include <algorithm>
#include <set>
#include <vector>

#include "grammar/grammar.h"

namespace lumen::grammar {
namespace {

constexpr int kMaxMergeDepth = 32;  // $ref / allOf chains deeper than this are circular or absurd
constexpr size_t kMaxAlternatives = 64;  // anyOf x anyOf products past this are refused

[[noreturn]] void fail(const std::string& pointer, const std::string& what) {
  throw GrammarError("JSON schema at '" + pointer + "': " + what, 0);
}

std::vector<std::string> types_of(const OrderedJson& type) {
  if (type.is_string()) return {type.get<std::string>()};
  std::vector<std::string> out;
  for (const auto& t : type) {
    if (t.is_string()) out.push_back(t.get<std::string>());
  }
  return out;
}

OrderedJson intersect_types(const OrderedJson& a, const OrderedJson& b, const std::string& pointer) {
  OrderedJson out = OrderedJson::array();
  const auto tb = types_of(b);
  for (const auto& t : types_of(a)) {
    for (const auto& u : tb) {
      if (t == u || (t == "integer" && u == "number")) out.push_back(t);
      else if (t == "number" && u == "integer") out.push_back(u);
    }
  }
  if (out.empty()) fail(pointer, "allOf: the types " + a.dump() + " and " + b.dump() + " have nothing in common");
  if (out.size() == 1) return out[0];
  return out;
}

OrderedJson values_of(const OrderedJson& schema) {
  if (schema.contains("const")) return OrderedJson::array({schema["const"]});
  return schema["enum"];
}

// A JSON value's fit with the simple keywords of a merged schema (type, bounds, lengths):
// enough to intersect an enum with the rest of an allOf.
bool value_fits(const OrderedJson& value, const OrderedJson& schema) {
  if (schema.contains("type")) {
    bool any = false;
    for (const auto& t : types_of(schema["type"])) {
      any = any || (t == "string" && value.is_string()) || (t == "boolean" && value.is_boolean()) ||
            (t == "null" && value.is_null()) || (t == "object" && value.is_object()) ||
            (t == "array" && value.is_array()) || (t == "number" && value.is_number()) ||
            (t == "integer" && value.is_number() &&
             (value.is_number_integer() || value.get<double>() == static_cast<double>(static_cast<int64_t>(value.get<double>()))));
    }
    if (!any) return false;
  }
  if (value.is_number()) {
    const double v = value.get<double>();
    if (schema.contains("minimum") && schema["minimum"].is_number() && v < schema["minimum"].get<double>()) return false;
    if (schema.contains("maximum") && schema["maximum"].is_number() && v > schema["maximum"].get<double>()) return false;
    if (schema.contains("exclusiveMinimum") && schema["exclusiveMinimum"].is_number() && v <= schema["exclusiveMinimum"].get<double>()) return false;
    if (schema.contains("exclusiveMaximum") && schema["exclusiveMaximum"].is_number() && v >= schema["exclusiveMaximum"].get<double>()) return false;
  }
  if (value.is_array()) {
    if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) return false;
    if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) return false;
  }
  return true;
}

class Merger {
 public:
  Merger(const RefResolver& resolve) : resolve_(resolve) {}

  // `schema` with its $ref and allOf replaced by their content.
  OrderedJson flatten(const OrderedJson& schema, const std::string& pointer, int depth) {
    if (depth > kMaxMergeDepth) fail(pointer, "allOf/$ref nesting is circular or deeper than " + std::to_string(kMaxMergeDepth));
    if (schema.is_boolean()) {
      if (!schema.get<bool>()) fail(pointer, "allOf contains false: nothing matches");
      return OrderedJson::object();
    }
    if (!schema.is_object()) fail(pointer, "a schema must be an object or a boolean");
    OrderedJson out = OrderedJson::object();
    for (const auto& [key, value] : schema.items()) {
      if (key != "$ref" && key != "allOf") out[key] = value;
    }
    if (schema.contains("$ref")) {
      if (!schema["$ref"].is_string()) fail(pointer, "$ref must be a string");
      const std::string ref = schema["$ref"].get<std::string>();
      out = merge(flatten(resolve_(ref, pointer), ref, depth + 1), out, pointer);
    }
    if (schema.contains("allOf")) {
      const auto& all = schema["allOf"];
      if (!all.is_array() || all.empty()) fail(pointer + "/allOf", "allOf must be a non-empty array");
      for (size_t i = 0; i < all.size(); ++i) {
        const std::string at = pointer + "/allOf/" + std::to_string(i);
        out = merge(out, flatten(all[i], at, depth + 1), at);
      }
    }
    return out;
  }

  OrderedJson merge(const OrderedJson& a, const OrderedJson& b, const std::string& pointer) {
    OrderedJson out = a;
    for (const auto& [key, value] : b.items()) {
      if (is_annotation_keyword(key)) continue;
      if (!out.contains(key)) {
        out[key] = value;
        continue;
      }
      OrderedJson& mine = out[key];
      if (key == "type") {
        mine = intersect_types(mine, value, pointer);
      } else if (key == "properties") {
        for (const auto& [name, property] : value.items()) {
          if (mine.contains(name)) mine[name] = OrderedJson{{"allOf", OrderedJson::array({mine[name], property})}};
          else mine[name] = property;
        }
      } else if (key == "required") {
        for (const auto& name : value) {
          if (std::find(mine.begin(), mine.end(), name) == mine.end()) mine.push_back(name);
        }
      } else if (key == "additionalProperties" || key == "items") {
        if (mine == false || value == false) mine = false;
        else if (mine == true) mine = value;
        else if (value != true) mine = OrderedJson{{"allOf", OrderedJson::array({mine, value})}};
      } else if (key == "minimum" || key == "minLength" || key == "minItems" || key == "exclusiveMinimum") {
        if (mine.is_number() && value.is_number() && value.get<double>() > mine.get<double>()) mine = value;
      } else if (key == "maximum" || key == "maxLength" || key == "maxItems" || key == "exclusiveMaximum") {
        if (mine.is_number() && value.is_number() && value.get<double>() < mine.get<double>()) mine = value;
      } else if (key == "anyOf" || key == "oneOf") {
        // (x1 | x2) & (y1 | y2) = x1&y1 | x1&y2 | ...
        if (mine.size() * value.size() > kMaxAlternatives) fail(pointer, "allOf of anyOfs has too many combinations");
        OrderedJson product = OrderedJson::array();
        for (const auto& x : mine) {
          for (const auto& y : value) product.push_back(OrderedJson{{"allOf", OrderedJson::array({x, y})}});
        }
        mine = product;
      } else if (key == "enum" || key == "const") {
        OrderedJson kept = OrderedJson::array();
        const OrderedJson theirs = values_of(b);
        for (const auto& v : values_of(out)) {
          if (std::find(theirs.begin(), theirs.end(), v) != theirs.end()) kept.push_back(v);
        }
        out.erase("const");
        out["enum"] = kept;
        if (kept.empty()) fail(pointer, "allOf: the enums have no value in common");
      } else if (mine != value) {
        fail(pointer, "allOf: two different values of '" + key + "' cannot be combined");
      }
    }
    // An enum with other constraints: keep the values that meet them.
    if (out.contains("enum") || out.contains("const")) {
      OrderedJson kept = OrderedJson::array();
      for (const auto& v : values_of(out)) {
        if (value_fits(v, out)) kept.push_back(v);
      }
      if (kept.empty()) fail(pointer, "allOf: no value of the enum meets the other constraints");
      out.erase("const");
      out["enum"] = kept;
    }
    return out;
  }

 private:
  const RefResolver& resolve_;
};

}  // namespace

bool is_annotation_keyword(const std::string& keyword) {
  static const std::set<std::string> kAnnotations = {
      "title", "description", "default", "examples", "$comment", "$id", "$schema", "$anchor", "deprecated",
      "readOnly", "writeOnly", "definitions", "$defs", "$vocabulary", "contentEncoding", "contentMediaType"};
  return kAnnotations.count(keyword) > 0;
}

OrderedJson merge_all_of(const OrderedJson& schemas, const std::string& pointer, const RefResolver& resolve) {
  Merger merger(resolve);
  return merger.flatten(OrderedJson{{"allOf", schemas}}, pointer, 0);
}

}  // namespace lumen::grammar
