// Issue 47: a grammar inside the documented limits whose masks cost the server tens of seconds
// and gigabytes, `(.{0,40}){0,50}`, as a regex, as a JSON Schema string pattern and (not
// rewritten) as GBNF. Nested repetition of one set becomes one repetition (the same strings,
// checked against std::regex), and whatever stays ambiguous is bounded per mask: masks within
// the work and memory limits come back, the others throw GrammarBudgetError, each in bounded
// time, on SmolLM2's real 49,152-token vocabulary.
#include <gtest/gtest.h>

#include <ctime>
#include <cstdio>
#include <fstream>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/mask_work.h"
#include "grammar/regex_to_gbnf.h"
#include "grammar_walk.h"
#include "lumen_testdata.h"
#include "real_vocabulary.h"

namespace lumen::grammar {
namespace {

TEST(NestedRepetition, OneSetNestedBecomesOneRepetition) {
  EXPECT_EQ(regex_to_gbnf("(.{0,40}){0,50}"), regex_to_gbnf(".{0,2000}"));
  EXPECT_EQ(regex_to_gbnf("(?:[a-z]{1,3}){2,4}"), regex_to_gbnf("[a-z]{2,12}"));
  EXPECT_EQ(regex_to_gbnf("(a+)*"), regex_to_gbnf("a*"));
  EXPECT_EQ(regex_to_gbnf("((a{0,2}){0,3}){0,4}"), regex_to_gbnf("a{0,24}"));
  EXPECT_EQ(regex_to_gbnf("(\\d{1,40}){1,50}"), regex_to_gbnf("\\d{1,2000}"));
  // Counts with gaps stay nested: 0, 3 or 6 a's.
  EXPECT_NE(regex_to_gbnf("(a{3}){0,2}"), regex_to_gbnf("a{0,6}"));
  // A merged lower count past the limit is refused like a written one.
  EXPECT_THROW(regex_to_gbnf("(a{100}){100}"), GrammarError);
}

// Every count of a's from 0 to 40: the grammar and ECMAScript's regex agree.
TEST(NestedRepetition, MergedCountsMatchStdRegex) {
  for (const char* pattern : {"(a{3}){0,2}", "(a{2,3}){0,5}", "(a{2,3}){1,5}", "(a{1,3}){2,4}", "(a{0,2}){3}",
                              "(a{2}){2,}", "(a{2,}){0,3}", "(a{2,}){1,3}", "(a*){2}", "(a{4,5}){1,}", "(a{4,5}){3,}",
                              "(a{4,5}){3,6}", "(a{0,1}){0,}", "(a{5}){1}", "((a{1,2}){2}){0,3}", "(a?){4,9}"}) {
    SCOPED_TRACE(pattern);
    const auto compiled = lumen::testing::compile_for_bytes(regex_to_gbnf(pattern));
    const std::regex reference(pattern);
    for (size_t n = 0; n <= 40; ++n) {
      const std::string text(n, 'a');
      EXPECT_EQ(lumen::testing::grammar_accepts(compiled, text), std::regex_match(text, reference)) << n << " a's";
    }
  }
}

// The most a hostile mask may take, in seconds of this thread's CPU time (wall time on a shared
// machine measures the neighbours): the work limit is about 0.15 s of one core in a Release
// build here; the sanitizers are several times slower.
constexpr double kMaxMaskSeconds = LUMEN_UNDER_SANITIZERS ? 20.0 : 1.5;

double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}
// Resident memory a hostile matcher may add (its DFA is capped at MaskLimits::dfa_bytes; the
// rest is the walker's levels and the caches; measured: at most 30 MiB). ASan keeps freed
// memory in quarantine (256 MiB), so it gets that much more.
constexpr long kMaxGrowthMiB = LUMEN_UNDER_SANITIZERS ? 160 + 256 : 160;

long resident_mib() {
  std::ifstream statm("/proc/self/statm");
  long pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * 4096 / (1 << 20);
}

struct HostileRun {
  int masks = 0;         // computed within budget
  bool refused = false;  // a mask threw GrammarBudgetError
  double worst_seconds = 0;
};

// Masks and tokens as a sampler would take them: each step's mask, then its first allowed
// ordinary token, `steps` times or until a mask is refused.
HostileRun run_hostile(const std::string& gbnf, int steps) {
  auto vocab = testing::load_real_vocabulary();
  auto compiled = compile_grammar(parse_gbnf(gbnf), vocab);
  GrammarMatcher matcher(compiled);
  HostileRun run;
  std::vector<uint32_t> mask(bitmask_words(vocab->size()));
  for (int step = 0; step < steps; ++step) {
    const double started = thread_cpu_seconds();
    try {
      matcher.fill_next_token_bitmask(mask);
    } catch (const GrammarBudgetError& error) {
      EXPECT_NE(std::string(error.what()).find("grammar budget exceeded"), std::string::npos) << error.what();
      run.refused = true;
    }
    const double seconds = thread_cpu_seconds() - started;
    run.worst_seconds = std::max(run.worst_seconds, seconds);
    if (run.refused) break;
    ++run.masks;
    int32_t next = -1;
    for (size_t id = 0; id < vocab->size() && next < 0; ++id) {
      // The longest tokens of the walk's first kind push the count furthest: any allowed one.
      if (((mask[id >> 5] >> (id & 31)) & 1u) && !vocab->is_end_of_generation(static_cast<int32_t>(id)) &&
          vocab->token_bytes(static_cast<int32_t>(id)).size() >= 3)
        next = static_cast<int32_t>(id);
    }
    if (next < 0) break;
    EXPECT_TRUE(matcher.accept_token(next));
  }
  return run;
}

TEST(HostileGrammar, NestedRepetitionAsRegexIsCheap) {
  LUMEN_REQUIRE_TESTDATA();
  const long before = resident_mib();
  const HostileRun run = run_hostile(regex_to_gbnf("(.{0,40}){0,50}"), 8);
  EXPECT_FALSE(run.refused) << "rewritten as .{0,2000}, it is an ordinary grammar";
  EXPECT_EQ(run.masks, 8);
  EXPECT_LT(run.worst_seconds, kMaxMaskSeconds / 4);
  EXPECT_LT(resident_mib() - before, kMaxGrowthMiB);
  std::printf("regex (.{0,40}){0,50}: worst mask %.3f s\n", run.worst_seconds);
}

TEST(HostileGrammar, NestedRepetitionAsSchemaPatternIsCheap) {
  LUMEN_REQUIRE_TESTDATA();
  const long before = resident_mib();
  const HostileRun run =
      run_hostile(json_schema_text_to_gbnf(R"({"type": "string", "pattern": "(.{0,40}){0,50}"})"), 8);
  EXPECT_FALSE(run.refused);
  EXPECT_LT(run.worst_seconds, kMaxMaskSeconds / 4);
  EXPECT_LT(resident_mib() - before, kMaxGrowthMiB);
  std::printf("schema pattern (.{0,40}){0,50}: %d masks, worst %.3f s\n", run.masks, run.worst_seconds);
}

// Not rewritten (GBNF is taken as written, and a second item in the group defeats the
// rewrite): every mask comes back or is refused within the bound, and memory stays bounded.
TEST(HostileGrammar, AmbiguousNestingIsBoundedPerMask) {
  LUMEN_REQUIRE_TESTDATA();
  for (const std::string& gbnf :
       {std::string("root ::= ([^\\n\\r]{0,40}){0,50}\n"), regex_to_gbnf("(.{0,40}x?){0,50}"),
        json_schema_text_to_gbnf(R"({"type": "string", "pattern": "^(.{0,40}a?){0,50}$"})")}) {
    SCOPED_TRACE(gbnf.substr(0, 120));
    const long before = resident_mib();
    const HostileRun run = run_hostile(gbnf, 8);
    EXPECT_LT(run.worst_seconds, kMaxMaskSeconds);
    EXPECT_LT(resident_mib() - before, kMaxGrowthMiB);
    std::printf("%d masks, %s, worst %.3f s of CPU, +%ld MiB\n", run.masks, run.refused ? "refused" : "all answered",
                run.worst_seconds, resident_mib() - before);
  }
}

// The limits leave ordinary grammars far from them: walks through the shared grammars and a
// few schemas, on the real vocabulary, never take a quarter of a mask's limit nor of a
// sequence's (the numbers printed are the measured costs docs/security.md quotes).
TEST(HostileGrammar, OrdinaryGrammarsStayFarBelowTheLimits) {
  LUMEN_REQUIRE_TESTDATA();
  std::vector<std::pair<std::string, std::string>> grammars;
  for (const char* file : {"json.gbnf", "json_arr.gbnf", "c.gbnf", "chess.gbnf", "english.gbnf", "japanese.gbnf",
                           "arithmetic.gbnf", "list.gbnf"})
    grammars.emplace_back(file, testing::read_grammar_file(file));
  grammars.emplace_back("schema: person", json_schema_text_to_gbnf(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 20}, "age": {"type": "integer", "minimum": 0, "maximum": 120},
      "email": {"type": "string", "format": "email"},
      "tags": {"type": "array", "items": {"enum": ["admin", "user", "guest"]}, "maxItems": 3}},
      "required": ["name", "age"], "additionalProperties": false})"));
  grammars.emplace_back(
      "schema: bounded string",
      json_schema_text_to_gbnf(
          R"({"type": "object", "properties": {"s": {"type": "string", "minLength": 10, "maxLength": 2000},
          "id": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4}$"}}, "required": ["s", "id"]})"));
  grammars.emplace_back("regex .{0,2000}", regex_to_gbnf(".{0,2000}"));
  auto vocab = testing::load_real_vocabulary();
  const MaskLimits limits = MaskLimits::for_trie(vocab->trie().size());
  std::printf("%zu tokens, %zu trie nodes: %.1f M units a mask\n", vocab->size(), vocab->trie().size(),
              static_cast<double>(limits.work) / 1e6);
  std::mt19937 rng(47);
  for (const auto& [name, gbnf] : grammars) {
    SCOPED_TRACE(name);
    GrammarMatcher matcher(compile_grammar(parse_gbnf(gbnf), vocab));
    std::vector<uint32_t> mask(bitmask_words(vocab->size()));
    uint64_t worst = 0;
    for (int step = 0; step < 40; ++step) {
      ASSERT_NO_THROW(matcher.fill_next_token_bitmask(mask));
      worst = std::max(worst, matcher.last_mask_work());
      std::vector<int32_t> allowed;
      for (size_t id = 0; id < vocab->size(); ++id)
        if (((mask[id >> 5] >> (id & 31)) & 1u) && !vocab->is_end_of_generation(static_cast<int32_t>(id)))
          allowed.push_back(static_cast<int32_t>(id));
      if (allowed.empty()) break;
      ASSERT_TRUE(matcher.accept_token(allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)]));
    }
    EXPECT_LT(worst, limits.work / 4);
    EXPECT_LT(matcher.total_mask_work(), limits.burst_work / 4);
    std::printf("%-24s worst mask %8.3f M units, 40 masks %8.3f M\n", name.c_str(), static_cast<double>(worst) / 1e6,
                static_cast<double>(matcher.total_mask_work()) / 1e6);
  }
}

// The limits are the matcher's: a tiny work limit refuses even an ordinary mask, and the
// matcher is unchanged by the refusal (the next mask, with room, is right).
TEST(HostileGrammar, LimitsGrowWithTheVocabularyTrie) {
  const MaskLimits small = MaskLimits::for_trie(1000),
                   reference = MaskLimits::for_trie(MaskLimits::kReferenceTrieNodes);
  EXPECT_EQ(small.work, MaskLimits{}.work);
  EXPECT_EQ(reference.work, MaskLimits{}.work);
  const MaskLimits big = MaskLimits::for_trie(4 * MaskLimits::kReferenceTrieNodes);
  EXPECT_EQ(big.work, 4 * MaskLimits{}.work);
  EXPECT_EQ(big.sustained_work, 4 * MaskLimits{}.sustained_work);
  EXPECT_EQ(big.dfa_bytes, MaskLimits{}.dfa_bytes);
}

TEST(HostileGrammar, WorkLimitRefusesAndLeavesTheMatcherUsable) {
  auto compiled = lumen::testing::compile_for_bytes("root ::= [a-z]{0,64} \"!\"\n");
  GrammarMatcher matcher(compiled);
  MaskLimits tiny;
  tiny.work = 10;
  matcher.set_mask_limits(tiny);
  std::vector<uint32_t> mask(bitmask_words(lumen::testing::byte_vocabulary()->size()));
  EXPECT_THROW(matcher.fill_next_token_bitmask(mask), GrammarBudgetError);
  matcher.set_mask_limits(MaskLimits{});
  matcher.fill_next_token_bitmask(mask);
  EXPECT_TRUE((mask['a' >> 5] >> ('a' & 31)) & 1u);
  EXPECT_TRUE(matcher.accept_token('a'));
  // Past a sequence's whole allowance (a burst, then so much a mask), a mask is refused too.
  MaskLimits no_allowance;
  no_allowance.burst_work = 0;
  no_allowance.sustained_work = 1;
  matcher.set_mask_limits(no_allowance);
  try {
    matcher.fill_next_token_bitmask(mask);
    ADD_FAILURE() << "a mask past the allowance came back";
  } catch (const GrammarBudgetError& error) {
    EXPECT_NE(std::string(error.what()).find("in all"), std::string::npos) << error.what();
  }
  // A jump-forward past the work it may take is shorter, never an error: it only saves steps.
  GrammarMatcher forced(lumen::testing::compile_for_bytes("root ::= \"hello\" [a-z]\n"));
  EXPECT_EQ(forced.forced_continuation(), "hello");
  forced.set_mask_limits(tiny);
  EXPECT_LT(forced.forced_continuation().size(), 5u);
  // A DFA limit smaller than one state's worth refuses too (a new grammar: no cache built yet).
  GrammarMatcher small_dfa(lumen::testing::compile_for_bytes("root ::= [a-z]{0,64} \"?\"\n"));
  MaskLimits small;
  small.dfa_bytes = 16;
  small_dfa.set_mask_limits(small);
  EXPECT_THROW(small_dfa.fill_next_token_bitmask(mask), GrammarBudgetError);
}

}  // namespace
}  // namespace lumen::grammar
