#include "engine_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nanobind/stl/string.h>

#include <string>

#include "util/error.h"

namespace nb = nanobind;

namespace lumen::python {

namespace {

[[noreturn]] void wrong_type(const std::string& key, const char* expected, nb::handle value) {
  throw nb::type_error(fmt::format("engine option {} must be {}, not {}", key, expected,
                                   nb::cast<std::string>(nb::str(value.type().attr("__name__"))))
                           .c_str());
}

// bool is an int in Python; an option that counts refuses it (True tokens is a mistake).
int64_t integer(const std::string& key, nb::handle value) {
  if (!nb::isinstance<nb::int_>(value) || nb::isinstance<nb::bool_>(value)) wrong_type(key, "an int", value);
  return nb::cast<int64_t>(value);
}

double number(const std::string& key, nb::handle value) {
  if (nb::isinstance<nb::bool_>(value) || !(nb::isinstance<nb::int_>(value) || nb::isinstance<nb::float_>(value))) {
    wrong_type(key, "a number", value);
  }
  return nb::cast<double>(value);
}

bool boolean(const std::string& key, nb::handle value) {
  if (!nb::isinstance<nb::bool_>(value)) wrong_type(key, "a bool", value);
  return nb::cast<bool>(value);
}

std::string text(const std::string& key, nb::handle value) {
  if (!nb::isinstance<nb::str>(value)) wrong_type(key, "a str", value);
  return nb::cast<std::string>(value);
}

int64_t positive(const std::string& key, nb::handle value) {
  const int64_t v = integer(key, value);
  if (v <= 0) fail("engine option {} must be > 0, not {}", key, v);
  return v;
}

void apply(EngineOptions& o, const std::string& key, nb::handle value) {
  EngineConfig& c = o.engine;
  if (key == "max_num_seqs") {
    c.max_num_seqs = positive(key, value);
  } else if (key == "max_num_batched_tokens") {
    c.max_num_batched_tokens = positive(key, value);
  } else if (key == "max_model_len") {
    c.max_model_len = positive(key, value);
  } else if (key == "block_size") {
    const int64_t v = positive(key, value);
    if (v > 1024) fail("engine option block_size must be in 1..1024, not {}", v);
    c.block_size = static_cast<int32_t>(v);
  } else if (key == "enable_prefix_caching") {
    c.enable_prefix_caching = boolean(key, value);
  } else if (key == "kv_cache_dtype") {
    const std::string name = text(key, value);
    const auto dtype = parse_kv_cache_dtype(name);
    if (!dtype) fail("engine option kv_cache_dtype: '{}' is not one of {}", name, kv_cache_dtype_choices());
    c.kv_cache_dtype = *dtype;
  } else if (key == "kv_cache_rotation") {
    c.kv_cache_rotation = boolean(key, value);
  } else if (key == "kv_cache_memory_bytes") {
    c.kv_cache_bytes = positive(key, value);
  } else if (key == "gpu_memory_utilization") {
    c.gpu_memory_utilization = number(key, value);
    if (!(c.gpu_memory_utilization > 0 && c.gpu_memory_utilization <= 1)) {
      fail("engine option gpu_memory_utilization must be in (0, 1], not {}", c.gpu_memory_utilization);
    }
  } else if (key == "swap_space") {  // GiB, as vLLM
    const double gib = number(key, value);
    if (!(gib >= 0 && gib <= 1024)) fail("engine option swap_space (GiB) must be in [0, 1024], not {}", gib);
    c.swap_space_bytes = static_cast<int64_t>(gib * static_cast<double>(int64_t{1} << 30));
  } else if (key == "scheduling_policy") {
    const std::string name = text(key, value);
    if (name != "fcfs" && name != "priority")
      fail("engine option scheduling_policy must be 'fcfs' or 'priority', not '{}'", name);
    c.policy = name == "fcfs" ? SchedulingPolicy::Fcfs : SchedulingPolicy::Priority;
  } else if (key == "preemption_mode") {
    const std::string name = text(key, value);
    if (name != "recompute" && name != "swap")
      fail("engine option preemption_mode must be 'recompute' or 'swap', not '{}'", name);
    c.preemption_mode = name == "recompute" ? PreemptionMode::Recompute : PreemptionMode::Swap;
  } else if (key == "speculative_config") {
    // The CLI's --speculative-config JSON, as a dict: one parser for both.
    if (!nb::isinstance<nb::dict>(value)) wrong_type(key, "a dict", value);
    const auto json = nb::cast<std::string>(nb::module_::import_("json").attr("dumps")(value));
    c.speculative = SpeculativeConfig::from_json(json, "speculative_config");
  } else if (key == "max_itl_ms") {
    c.max_itl_ms = number(key, value);
    if (!(c.max_itl_ms > 0 && c.max_itl_ms <= 60000))
      fail("engine option max_itl_ms must be in (0, 60000], not {}", c.max_itl_ms);
  } else if (key == "seed") {
    o.seed = seed_value("engine option seed", value);
  } else if (key == "threads") {
    const int64_t threads = positive(key, value);
    if (threads > 1024) fail("engine option threads must be in 1..1024, not {}", threads);
    o.model.threads = static_cast<unsigned>(threads);
  } else if (key == "device") {
    o.model.device = text(key, value);
  } else if (key == "chat_template") {
    o.model.chat_template = text(key, value);
  } else if (key == "mmproj") {
    // A vision-language model's projector file: LLM.chat then takes image parts.
    o.model.mmproj = text(key, value);
  } else {
    // lumen.LLM checks the names first (with a did-you-mean); this is for _Engine used directly.
    throw nb::type_error(
        fmt::format("unknown engine option '{}' (Lumen has: {})", key, fmt::join(kEngineOptionNames, ", ")).c_str());
  }
}

}  // namespace

std::optional<uint64_t> seed_value(const char* what, nb::handle value) {
  if (value.is_none()) return std::nullopt;
  if (!nb::isinstance<nb::int_>(value) || nb::isinstance<nb::bool_>(value)) {
    throw nb::type_error(
        fmt::format("{} must be an int, not {}", what, nb::cast<std::string>(nb::str(value.type().attr("__name__"))))
            .c_str());
  }
  // Python ints have no bound: compare as Python does before narrowing.
  const nb::object minus_one = nb::int_(-1);
  const nb::object top = nb::module_::import_("builtins").attr("int")("18446744073709551615");
  if (value.equal(minus_one)) return std::nullopt;
  if (nb::bool_(value < nb::int_(0)) || nb::bool_(value > top)) {
    fail("{} must be -1 (a random seed) or an integer from 0 to 18446744073709551615, not {}", what,
         nb::cast<std::string>(nb::str(value)));
  }
  return nb::cast<uint64_t>(value);
}

EngineOptions engine_options_from(const nb::dict& options) {
  EngineOptions out;
  for (auto [key, value] : options) {
    if (value.is_none()) continue;  // None: Lumen's default, as vLLM's optional arguments
    apply(out, nb::cast<std::string>(key), value);
  }
  return out;
}

}  // namespace lumen::python
