#pragma once
// The flags for what a sequence does at the end of its context (engine/context_shift.h), shared
// by run, serve and bench throughput:
//   --context-overflow finish|shift   finish with "length" (default), or drop old positions
//   --context-keep N                  positions a shift keeps at the start
//   --kv-eviction sink:N,window:W     StreamingLLM: keep N sink positions and the last W
//   --kv-eviction snapkv:budget=B[,window=W,kernel=K] | h2o:budget=B[,recent=R]
//                                     importance-based eviction (lumen/kv_eviction.h)
#include <CLI/CLI.hpp>
#include <string>

#include "lumen/engine_config.h"

namespace lumen::cli {

struct ContextShiftFlags {
  std::string overflow = "finish";
  int64_t keep = 0;
  std::string eviction;

  void add_to(CLI::App* cmd);
  // Call after parsing. Throws lumen::Error for a malformed --kv-eviction.
  void apply(EngineConfig& config) const;
};

}  // namespace lumen::cli
