// grammar_convert_tool: the JSON Schema / regex converters and the matcher on the command line,
// for the Python tests that check them against jsonschema and Python's re.
//
//   grammar_convert_tool gbnf   (--schema JSON | --regex PATTERN | --gbnf-file FILE)
//   grammar_convert_tool walk   (--schema JSON | --regex PATTERN) [--count N] [--seed S] [--max-bytes B]
//       N random strings of the grammar, one JSON string a line
//   grammar_convert_tool accept (--schema JSON | --regex PATTERN)
//       for each JSON string a line on stdin, "1" if the grammar accepts it whole, else "0"
#include <cstdio>
#include <fstream>
#include <iterator>
#include <iostream>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "grammar/json_schema_to_gbnf.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar_walk.h"

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(stderr,
                 "usage: %s gbnf|walk|accept --schema JSON|--regex PATTERN [--count N] [--seed S] [--any-whitespace]\n",
                 argv[0]);
    return 2;
  }
  const std::string mode = argv[1], source = argv[2], argument = argv[3];
  size_t count = 100, max_bytes = 2000;
  uint64_t seed = 1;
  // A schema's loose whitespace (JsonSchemaOptions::compact_whitespace off): what Python's
  // json.dumps writes between tokens.
  lumen::grammar::JsonSchemaOptions schema_options;
  for (int i = 4; i < argc; ++i)
    if (std::string(argv[i]) == "--any-whitespace") schema_options.compact_whitespace = false;
  for (int i = 4; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--count") count = std::stoul(argv[i + 1]);
    else if (flag == "--seed") seed = std::stoull(argv[i + 1]);
    else if (flag == "--max-bytes") max_bytes = std::stoul(argv[i + 1]);
  }
  try {
    std::string gbnf;
    if (source == "--schema") {
      gbnf = lumen::grammar::json_schema_text_to_gbnf(argument, schema_options);
    } else if (source == "--regex") {
      gbnf = lumen::grammar::regex_to_gbnf(argument);
    } else {  // --gbnf-file
      std::ifstream in(argument);
      gbnf.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    if (mode == "gbnf") {
      std::cout << gbnf;
      return 0;
    }
    const auto compiled = lumen::testing::compile_for_bytes(gbnf);
    if (mode == "walk") {
      std::mt19937_64 rng(seed);
      size_t written = 0;
      for (size_t attempt = 0; written < count && attempt < count * 20; ++attempt) {
        bool dead_end = false;
        if (auto text = lumen::testing::random_walk(compiled, rng, max_bytes, &dead_end)) {
          std::cout << nlohmann::json(*text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
          ++written;
        } else if (dead_end) {
          std::fprintf(stderr, "a walk reached a dead end\n");
          return 1;
        }
      }
      return 0;
    }
    if (mode == "accept") {
      std::string line;
      while (std::getline(std::cin, line)) {
        if (line.empty()) continue;
        const std::string text = nlohmann::json::parse(line).get<std::string>();
        std::cout << (lumen::testing::grammar_accepts(compiled, text) ? "1" : "0") << std::endl;
      }
      return 0;
    }
  } catch (const lumen::grammar::GrammarError& error) {
    std::fprintf(stderr, "GrammarError at %zu: %s\n", error.offset, error.what());
    return 3;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
