// JSON Schema -> GBNF. A visitor turns each (sub)schema into a rule matching one JSON value
// and nothing around it; $refs become named rules (so recursive schemas work), allOf is merged
// first (json_schema_merge.h), anyOf/oneOf/type arrays become alternations. Whitespace (only
// with compact_whitespace off) belongs to the container: after its opening bracket, after each
// key, colon, member and comma. The root value is not followed by any, so once it closes the
// grammar is complete and only the end of generation may follow.
#include "grammar/json_schema_to_gbnf.h"

#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/gbnf_writer.h"
#include "grammar/grammar.h"
#include "grammar/json_key_exclusion.h"
#include "grammar/json_pointer.h"
#include "grammar/json_schema_merge.h"
#include "grammar/json_schema_primitives.h"
#include "grammar/regex_gbnf_expression.h"

namespace lumen::grammar {
namespace {

constexpr int kMaxDepth = 128;  // schema nesting; deeper input is refused, not recursed into

class SchemaConverter {
 public:
  SchemaConverter(const OrderedJson& root, const JsonSchemaOptions& options)
      : root_(root), options_(options), rules_(size_t{4} << 20, options.rule_prefix) {}

  std::string convert() {
    const std::string root_name = rules_.reserve(options_.root_rule);
    // An empty schema at the top means "a JSON object" (response_format json_object, and
    // what llama.cpp does); deeper down, {} is any value.
    const std::string value =
        root_.is_object() && root_.empty() ? any_object() : visit(root_, "", "root-value", 0);
    rules_.define(root_name, value);
    return rules_.text(root_name);
  }

 private:
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw GrammarError("JSON schema at '" + pointer + "': " + what, 0);
  }

  std::string space() {
    if (options_.compact_whitespace) return "";
    std::string out(1, ' ');
    out += rules_.add("space", R"(( " " | "\n"{1,2} [ \t]{0,20} )?)");
    return out;
  }
  // A value inside a container, with the whitespace that may follow it.
  std::string spaced(const std::string& value) { return value + space(); }
  std::string char_rule() { return rules_.add("char", kJsonCharBody); }
  std::string string_any() { return rules_.add("string", "\"\\\"\" " + char_rule() + "* \"\\\"\""); }
  std::string integral_part() { return rules_.add("integral-part", kIntegralPartBody); }
  // Up to 20 decimals: Python writes 0.1 + 0.2 with 17, small values with more.
  std::string decimal_part() { return rules_.add("decimal-part", "[0-9]{1,20}"); }
  std::string number_any() {
    // JSON exponents may have leading zeros (Python writes 1e-05).
    return rules_.add("number",
                      "(\"-\"? " + integral_part() + ") (\".\" " + decimal_part() + ")? ([eE] [-+]? [0-9]{1,16})?");
  }
  std::string integer_any() { return rules_.add("integer", "(\"-\"? " + integral_part() + ")"); }
  std::string boolean() { return rules_.add("boolean", "(\"true\" | \"false\")"); }
  std::string null() { return rules_.add("null", "\"null\""); }

  // Any JSON value: a recursive rule set of its own.
  std::string any_value() {
    if (!any_value_.empty()) return any_value_;
    any_value_ = rules_.reserve("value");
    const std::string item = spaced(any_value_);
    const std::string array =
        rules_.add("array", "\"[\"" + space() + " (" + item + " (\",\"" + space() + " " + item + ")*)? \"]\"");
    rules_.define(any_value_, any_object() + " | " + array + " | " + string_any() + " | " + number_any() + " | " +
                                  boolean() + " | " + null());
    return any_value_;
  }
  std::string any_object() {
    if (!any_object_.empty()) return any_object_;
    any_object_ = rules_.reserve("object");
    const std::string value = any_value();
    const std::string kv = spaced(string_any()) + " \":\"" + space() + " " + spaced(value);
    rules_.define(any_object_, "\"{\"" + space() + " (" + kv + " (\",\"" + space() + " " + kv + ")*)? \"}\"");
    return any_object_;
  }

  // An enum/const value: scalars as JSON writes them (strings with raw UTF-8), objects and
  // arrays token by token with whitespace allowed between, like any other JSON.
  std::string value_literal(const OrderedJson& value) {
    if (!value.is_object() && !value.is_array()) return gbnf_literal(value.dump());
    const bool object = value.is_object();
    std::string out = object ? "\"{\"" : "\"[\"";
    out += space();
    bool first = true;
    for (const auto& [key, member] : value.items()) {
      if (!first) out += " \",\"" + space();
      first = false;
      if (object) {
        out += ' ';
        out += gbnf_literal(OrderedJson(key).dump());
        out += space();
        out += " \":\"";
        out += space();
      }
      out += ' ';
      out += value_literal(member);
      out += space();
    }
    out += object ? " \"}\"" : " \"]\"";
    return out;
  }

  const OrderedJson& resolve(const std::string& ref, const std::string& pointer) {
    if (ref.empty() || ref[0] != '#') fail(pointer, "only local $refs (\"#...\") are supported, not '" + ref + "'");
    const std::string fragment = percent_decode(ref.substr(1));
    if (!fragment.empty() && fragment[0] != '/') fail(pointer, "$ref '" + ref + "' is not a JSON pointer");
    try {
      return root_.at(OrderedJson::json_pointer(fragment));
    } catch (const nlohmann::json::exception&) {
      fail(pointer, "$ref '" + ref + "' points to nothing");
    }
  }

  // Keywords beside $ref / anyOf that constrain (not just annotate).
  static OrderedJson constraints_besides(const OrderedJson& schema, std::initializer_list<const char*> skip) {
    OrderedJson out = OrderedJson::object();
    for (const auto& [key, value] : schema.items()) {
      bool skipped = is_annotation_keyword(key);
      for (const char* s : skip) skipped = skipped || key == s;
      if (!skipped) out[key] = value;
    }
    return out;
  }

  std::string visit(const OrderedJson& schema, const std::string& pointer, const std::string& name, int depth) {
    if (depth > kMaxDepth) fail(pointer, "schema nested deeper than " + std::to_string(kMaxDepth));
    if (schema.is_boolean()) {
      if (schema.get<bool>()) return any_value();
      fail(pointer, "the schema false matches nothing");
    }
    if (!schema.is_object()) fail(pointer, "a schema must be an object or a boolean");
    const RefResolver resolver = [this](const std::string& ref, const std::string& at) -> const OrderedJson& {
      return resolve(ref, at);
    };

    if (schema.contains("$ref")) {
      const OrderedJson others = constraints_besides(schema, {"$ref"});
      if (!others.empty()) {
        return visit(merge_all_of(OrderedJson::array({OrderedJson{{"$ref", schema["$ref"]}}, others}), pointer, resolver),
                     pointer, name, depth + 1);
      }
      if (!schema["$ref"].is_string()) fail(pointer, "$ref must be a string");
      return visit_ref(schema["$ref"].get<std::string>(), pointer, depth);
    }
    if (schema.contains("allOf")) {
      return visit(merge_all_of(OrderedJson::array({schema}), pointer, resolver), pointer, name, depth + 1);
    }
    for (const char* key : {"anyOf", "oneOf"}) {
      if (!schema.contains(key)) continue;
      const auto& alternatives = schema[key];
      const std::string at = pointer + "/" + key;
      if (!alternatives.is_array() || alternatives.empty()) fail(at, std::string(key) + " must be a non-empty array");
      // Keywords beside anyOf apply to every alternative: (s & (a | b)) = (s & a) | (s & b).
      // oneOf is written as anyOf: a grammar cannot count matches.
      const OrderedJson others = constraints_besides(schema, {"anyOf", "oneOf"});
      std::string body;
      for (size_t i = 0; i < alternatives.size(); ++i) {
        const std::string alternative_pointer = at + "/" + std::to_string(i);
        const std::string rule =
            others.empty() ? visit(alternatives[i], alternative_pointer, name + "-" + std::to_string(i), depth + 1)
                           : visit(merge_all_of(OrderedJson::array({others, alternatives[i]}), alternative_pointer, resolver),
                                   alternative_pointer, name + "-" + std::to_string(i), depth + 1);
        body += (i ? " | " : "") + rule;
      }
      return rules_.add(name, body);
    }
    if (schema.contains("const")) return rules_.add(name, "(" + value_literal(schema["const"]) + ")");
    if (schema.contains("enum")) {
      const auto& values = schema["enum"];
      if (!values.is_array() || values.empty()) fail(pointer + "/enum", "enum must be a non-empty array");
      std::string body = "(";
      for (size_t i = 0; i < values.size(); ++i) body += (i ? " | " : "") + value_literal(values[i]);
      return rules_.add(name, body + ")");
    }

    if (schema.contains("type")) {
      const auto& type = schema["type"];
      if (type.is_array()) {
        if (type.empty()) fail(pointer + "/type", "an empty list of types matches nothing");
        std::string body;
        for (size_t i = 0; i < type.size(); ++i) {
          if (!type[i].is_string()) fail(pointer + "/type/" + std::to_string(i), "a type must be a string");
          body += (i ? " | " : "") + visit_typed(schema, type[i].get<std::string>(), pointer, name + "-" + std::to_string(i), depth);
        }
        return rules_.add(name, body);
      }
      if (!type.is_string()) fail(pointer + "/type", "type must be a string or an array of strings, not " + type.dump());
      return visit_typed(schema, type.get<std::string>(), pointer, name, depth);
    }
    // No type: what the keywords imply, else any value.
    for (const char* key : {"properties", "additionalProperties", "required"}) {
      if (schema.contains(key)) return visit_typed(schema, "object", pointer, name, depth);
    }
    for (const char* key : {"items", "prefixItems", "minItems", "maxItems"}) {
      if (schema.contains(key)) return visit_typed(schema, "array", pointer, name, depth);
    }
    for (const char* key : {"pattern", "format", "minLength", "maxLength"}) {
      if (schema.contains(key)) return visit_typed(schema, "string", pointer, name, depth);
    }
    return any_value();
  }

  std::string visit_ref(const std::string& ref, const std::string& pointer, int depth) {
    if (auto it = ref_rules_.find(ref); it != ref_rules_.end()) return it->second;
    const OrderedJson* target = &resolve(ref, pointer);
    // A chain of bare $refs that comes back to itself never reaches a value.
    std::set<std::string> chain = {ref};
    for (const OrderedJson* t = target; t->is_object() && t->size() == 1 && t->contains("$ref") && (*t)["$ref"].is_string();) {
      const std::string next = (*t)["$ref"].get<std::string>();
      if (!chain.insert(next).second) fail(pointer, "$ref '" + ref + "' is circular");
      t = &resolve(next, pointer);
    }
    std::string hint = "ref" + percent_decode(ref.substr(1));
    const std::string name = rules_.reserve(hint);
    ref_rules_[ref] = name;
    rules_.define(name, visit(*target, percent_decode(ref.substr(1)), name + "-value", depth + 1));
    return name;
  }

  std::optional<size_t> count_keyword(const OrderedJson& schema, const char* key, const std::string& pointer) {
    if (!schema.contains(key)) return std::nullopt;
    const auto& value = schema[key];
    if (!value.is_number() || value.get<double>() < 0 || std::floor(value.get<double>()) != value.get<double>()) {
      fail(pointer + "/" + key, std::string(key) + " must be a non-negative integer");
    }
    const double count = value.get<double>();
    return count > 1e18 ? static_cast<size_t>(1e18) : static_cast<size_t>(count);
  }

  // min..max with max lowered to the repetition limit (fewer outputs, all valid) and a min past
  // it refused (it cannot be lowered).
  std::pair<size_t, std::optional<size_t>> bounded_counts(const OrderedJson& schema, const char* min_key,
                                                          const char* max_key, const std::string& pointer) {
    size_t min = count_keyword(schema, min_key, pointer).value_or(0);
    std::optional<size_t> max = count_keyword(schema, max_key, pointer);
    if (min > options_.max_repetition) {
      fail(pointer + "/" + min_key, std::string(min_key) + " " + std::to_string(min) + " exceeds the limit " +
                                        std::to_string(options_.max_repetition));
    }
    if (max && *max > options_.max_repetition) max = options_.max_repetition;
    if (max && *max < min) fail(pointer, std::string(max_key) + " is below " + min_key + ": nothing matches");
    return {min, max};
  }

  std::string visit_typed(const OrderedJson& schema, const std::string& type, const std::string& pointer,
                          const std::string& name, int depth) {
    if (type == "object") return visit_object(schema, pointer, name, depth);
    if (type == "array") return visit_array(schema, pointer, name, depth);
    if (type == "string") return visit_string(schema, pointer, name);
    if (type == "number" || type == "integer") return visit_number(schema, type == "integer", pointer, name);
    if (type == "boolean") return boolean();
    if (type == "null") return null();
    fail(pointer + "/type", "unknown type '" + type + "'");
  }

  std::string visit_string(const OrderedJson& schema, const std::string& pointer, const std::string& name) {
    if (schema.contains("pattern")) {
      if (!schema["pattern"].is_string()) fail(pointer + "/pattern", "pattern must be a string");
      RegexOptions regex;
      regex.target = RegexTarget::kJsonStringContent;
      // The string must match the whole pattern, anchored or not (as llama.cpp and XGrammar
      // do): such a string also matches JSON Schema's unanchored search, and `.*` at both ends
      // would leave the matcher one parse per occurrence of the pattern (slow masks).
      regex.search = false;
      regex.max_repetition = options_.max_repetition;
      std::string expression;
      try {
        expression = regex_gbnf_expression(schema["pattern"].get<std::string>(), regex);
      } catch (const GrammarError& error) {
        fail(pointer + "/pattern", error.what());
      }
      return rules_.add(name, "\"\\\"\" " + expression + " \"\\\"\"");
    }
    if (schema.contains("format") && schema["format"].is_string()) {
      const std::string format = schema["format"].get<std::string>();
      if (auto body = string_format_body(format)) return rules_.add(format + "-string", *body);
    }
    const auto [min, max] = bounded_counts(schema, "minLength", "maxLength", pointer);
    if (min == 0 && !max) return string_any();
    return rules_.add(name, "\"\\\"\" " + char_rule() + repetition_suffix(min, max) + " \"\\\"\"");
  }

  std::string visit_number(const OrderedJson& schema, bool integer, const std::string& pointer, const std::string& name) {
    NumericBounds bounds;
    const auto read = [&](const char* key) -> std::optional<double> {
      if (!schema.contains(key)) return std::nullopt;
      const auto& value = schema[key];
      if (value.is_boolean()) return std::nullopt;  // draft 4's exclusiveMinimum: true, read below
      if (!value.is_number() || !std::isfinite(value.get<double>())) fail(pointer + "/" + key, std::string(key) + " must be a number");
      return value.get<double>();
    };
    bounds.minimum = read("minimum");
    bounds.maximum = read("maximum");
    if (auto exclusive = read("exclusiveMinimum"); exclusive && (!bounds.minimum || *exclusive >= *bounds.minimum)) {
      bounds.minimum = exclusive;
      bounds.exclusive_minimum = true;
    }
    if (auto exclusive = read("exclusiveMaximum"); exclusive && (!bounds.maximum || *exclusive <= *bounds.maximum)) {
      bounds.maximum = exclusive;
      bounds.exclusive_maximum = true;
    }
    if (schema.value("exclusiveMinimum", OrderedJson()) == true) bounds.exclusive_minimum = bounds.minimum.has_value();
    if (schema.value("exclusiveMaximum", OrderedJson()) == true) bounds.exclusive_maximum = bounds.maximum.has_value();
    if (!bounds.minimum && !bounds.maximum) return integer ? integer_any() : number_any();
    const std::optional<std::string> body =
        integer ? bounded_integer_body(bounds) : bounded_number_body(bounds, decimal_part());
    if (!body) fail(pointer, std::string("no ") + (integer ? "integer" : "number") + " of at most 16 digits meets the bounds");
    return rules_.add(name, *body);
  }

  std::string visit_array(const OrderedJson& schema, const std::string& pointer, const std::string& name, int depth) {
    const std::string open = "\"[\"" + space(), close = "\"]\"", comma = "\",\"" + space();
    auto [min, max] = bounded_counts(schema, "minItems", "maxItems", pointer);
    // A tuple: prefixItems (2020-12) or an array under items (draft 4-2019), then the rest.
    const OrderedJson* tuple = nullptr;
    const OrderedJson* rest = nullptr;
    std::string tuple_key, rest_key;
    if (schema.contains("prefixItems") && schema["prefixItems"].is_array()) {
      tuple = &schema["prefixItems"], tuple_key = "prefixItems";
      if (schema.contains("items")) rest = &schema["items"], rest_key = "items";
    } else if (schema.contains("items") && schema["items"].is_array()) {
      tuple = &schema["items"], tuple_key = "items";
      if (schema.contains("additionalItems")) rest = &schema["additionalItems"], rest_key = "additionalItems";
    } else if (schema.contains("items")) {
      rest = &schema["items"], rest_key = "items";
    } else if (schema.contains("prefixItems")) {
      rest = &schema["prefixItems"], rest_key = "prefixItems";  // an object here: llama.cpp reads it as items
    }
    std::vector<std::string> fixed;
    if (tuple) {
      // Every tuple item is written (a shorter array would also validate; the grammar asks for all).
      for (size_t i = 0; i < tuple->size(); ++i) {
        fixed.push_back(spaced(visit((*tuple)[i], pointer + "/" + tuple_key + "/" + std::to_string(i),
                                     name + "-" + std::to_string(i), depth + 1)));
      }
      if (max && *max < fixed.size()) fail(pointer, "maxItems is below the number of prefixItems");
      // Past the tuple, only items of an explicit schema (absent = none, a strict reading).
      if (!rest || *rest == false) {
        min = 0, max = 0;
      } else {
        min = min > fixed.size() ? min - fixed.size() : 0;
        if (max) *max -= fixed.size();
      }
    } else if (rest && *rest == false) {
      if (min > 0) fail(pointer, "items is false but minItems > 0");
      max = 0;
    }
    std::string item;
    if (!max || *max > 0) {
      item = spaced(rest ? visit(*rest, pointer + "/" + rest_key, name + "-item", depth + 1) : any_value());
    }
    std::string body = open;
    for (size_t i = 0; i < fixed.size(); ++i) body += (i ? " " + comma + " " : " ") + fixed[i];
    if (!fixed.empty()) {
      if (!max || *max > 0) body += " (" + comma + " " + item + ")" + repetition_suffix(min, max);
    } else if (!max || *max > 0) {
      // item ("," item){min-1,max-1}, optional as a whole when min is 0.
      const std::string tail =
          " (" + comma + " " + item + ")" + repetition_suffix(min > 0 ? min - 1 : 0, max ? std::optional<size_t>(*max - 1) : std::nullopt);
      body += min > 0 ? " " + item + tail : " (" + item + tail + ")?";
    }
    return rules_.add(name, body + " " + close);
  }

  // A key that is none of `names` (as decoded JSON): inside a declared name's prefix only
  // unescaped characters are allowed (an escape could spell a declared name another way).
  std::string excluded_key(const std::vector<std::string>& names, const std::string& pointer) {
    const std::optional<std::string> body = key_body_excluding(names, char_rule());
    if (!body) fail(pointer, "a property name is not valid UTF-8");
    return rules_.add("additional-key", "\"\\\"\" " + *body + " \"\\\"\"");
  }

  std::string visit_object(const OrderedJson& schema, const std::string& pointer, const std::string& name, int depth) {
    const std::string open = "\"{\"" + space(), close = "\"}\"", comma = "\",\"" + space(), colon = "\":\"" + space();
    const OrderedJson empty = OrderedJson::object();
    const OrderedJson& properties = schema.contains("properties") ? schema["properties"] : empty;
    if (!properties.is_object()) fail(pointer + "/properties", "properties must be an object");
    std::set<std::string> required;
    if (schema.contains("required")) {
      if (!schema["required"].is_array()) fail(pointer + "/required", "required must be an array");
      for (const auto& key : schema["required"]) {
        if (!key.is_string()) fail(pointer + "/required", "required must list strings");
        required.insert(key.get<std::string>());
      }
    }
    // additionalProperties: absent means none when properties are declared (as llama.cpp;
    // stricter than JSON Schema, whose default admits anything), any value otherwise.
    std::string additional_value;
    if (schema.contains("additionalProperties")) {
      const auto& additional = schema["additionalProperties"];
      if (additional != false) {
        additional_value = additional == true ? any_value()
                                              : visit(additional, pointer + "/additionalProperties", name + "-additional", depth + 1);
      }
    } else if (properties.empty()) {
      additional_value = any_value();
    }
    // Declared properties, then required names that are not declared (their values as
    // additionalProperties says).
    std::vector<std::pair<std::string, std::string>> members;  // name, value rule
    for (const auto& [key, property] : properties.items()) {
      members.emplace_back(key, visit(property, pointer + "/properties/" + pointer_token(key), name + "-" + key, depth + 1));
    }
    for (const auto& key : required) {
      if (properties.contains(key)) continue;
      if (schema.contains("additionalProperties") && schema["additionalProperties"] == false) {
        fail(pointer + "/required", "required property '" + key + "' is excluded by additionalProperties: false");
      }
      members.emplace_back(key, additional_value.empty() ? any_value() : additional_value);
    }
    std::vector<std::string> names, kvs;
    std::vector<bool> is_required;
    for (const auto& [key, value] : members) {
      names.push_back(key);
      kvs.push_back(rules_.add(name + "-" + key + "-kv",
                               gbnf_literal(OrderedJson(key).dump()) + space() + " " + colon + " " + spaced(value)));
      is_required.push_back(required.count(key) > 0);
    }
    if (members.empty() && additional_value == any_value()) return any_object();

    // Declared order; each optional property may be left out. start[i]: properties i.. when
    // none has been written yet (no comma before the first); rest[i]: after one has.
    std::string start, rest;
    if (!additional_value.empty()) {
      const std::string key = names.empty() ? string_any() : excluded_key(names, pointer);
      const std::string kv =
          rules_.add(name + "-additional-kv", spaced(key) + " " + colon + " " + spaced(additional_value));
      rest = rules_.add(name + "-additional-rest", "(" + comma + " " + kv + ")*");
      start = rules_.add(name + "-additional-start", "(" + kv + " " + rest + ")?");
    }
    for (size_t i = names.size(); i-- > 0;) {
      const std::string hint = name + "-" + names[i];
      const std::string after = rest.empty() ? "" : " " + rest;
      std::string new_rest, new_start;
      if (is_required[i]) {
        new_rest = comma + " " + kvs[i] + after;
        new_start = kvs[i] + after;
      } else {
        new_rest = "(" + comma + " " + kvs[i] + ")?" + after;
        new_start = start.empty() ? "(" + kvs[i] + after + ")?" : "(" + kvs[i] + after + " | " + start + ")";
      }
      rest = rules_.add(hint + "-rest", new_rest);
      start = rules_.add(hint + "-start", new_start);
    }
    return rules_.add(name, open + (start.empty() ? "" : " " + start) + " " + close);
  }

  const OrderedJson& root_;
  const JsonSchemaOptions& options_;
  GbnfRules rules_;
  std::map<std::string, std::string> ref_rules_;
  std::string any_value_, any_object_;
};

}  // namespace

std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options) {
  try {
    return SchemaConverter(schema, options).convert();
  } catch (const nlohmann::json::exception& error) {
    // A keyword of an unexpected JSON type that slipped past the checks.
    throw GrammarError(std::string("JSON schema: ") + error.what(), 0);
  }
}

std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options) {
  return json_schema_to_gbnf(nlohmann::ordered_json::parse(schema.dump()), options);
}

std::string json_schema_text_to_gbnf(std::string_view schema_text, const JsonSchemaOptions& options) {
  nlohmann::ordered_json schema;
  try {
    schema = nlohmann::ordered_json::parse(schema_text);
  } catch (const nlohmann::json::parse_error& error) {
    throw GrammarError(std::string("JSON schema: ") + error.what(), error.byte > 0 ? error.byte - 1 : 0);
  }
  return json_schema_to_gbnf(schema, options);
}

std::string json_object_gbnf(const JsonSchemaOptions& options) {
  return json_schema_to_gbnf(nlohmann::ordered_json::object(), options);
}

}  // namespace lumen::grammar
