// Structured output through the engine on the synthetic model (random weights: it would write
// anything, so every constraint is really what shapes the text): sampled completions of a
// regex, a choice list and a JSON schema always satisfy them, end exactly where the grammar may
// end (no end-of-generation before), n > 1 gives each completion its own matcher, speculative
// drafts change nothing, and invalid constraints are the caller's error with nothing left behind.
#include <nlohmann/json.hpp>

#include <limits>
#include <regex>

#include "engine/engine_test_access.h"
#include "engine/structured_output.h"
#include "grammar/grammar.h"
#include "grammar/mask_work.h"
#include "spec/ngram_proposer.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

constexpr bool kUnderSanitizers = LUMEN_UNDER_SANITIZERS != 0;

class EngineStructured : public SynthEngineTest {
 protected:
  static SamplingParams sampled(StructuredOutputs constraint, int32_t n, uint64_t seed, int64_t max_tokens = 60) {
    SamplingParams p;
    p.temperature = 1.0f;
    p.max_tokens = max_tokens;
    p.n = n;
    p.seed = seed;
    p.structured_outputs = std::move(constraint);
    return p;
  }

  // Every completion of `params` for a few prompts.
  static std::vector<GenerationResult> generate(const SamplingParams& params, int prompts, EngineConfig c = config(512),
                                                EngineStats* stats = nullptr) {
    Engine engine(handle(), c);
    std::vector<RequestHandle> handles;
    for (int i = 0; i < prompts; ++i) {
      for (RequestHandle& h : engine.add_request_n(prompt(6 + i, i), params)) handles.push_back(std::move(h));
    }
    drain(engine);
    std::vector<GenerationResult> out;
    for (RequestHandle& h : handles) out.push_back(h.collect());
    EXPECT_EQ(engine.stats().kv_blocks_used, 0);
    if (stats != nullptr) *stats = engine.stats();
    return out;
  }

  // The text a completion's tokens stand for, end-of-generation tokens left out.
  static std::string text_of(const GenerationResult& r) {
    std::string text;
    for (int32_t t : r.tokens) {
      if (!model_->tokenizer.is_special(t)) text += model_->tokenizer.token_bytes(t);
    }
    return text;
  }
};

TEST_F(EngineStructured, RegexCompletionsMatchAndEndWhereTheRegexDoes) {
  StructuredOutputs c;
  c.regex = "[0-9]{3}-[a-z]{2,4}( ok)?";
  const std::regex whole("[0-9]{3}-[a-z]{2,4}( ok)?");
  int finished = 0;
  for (const GenerationResult& r : generate(sampled(c, 4, 11), kUnderSanitizers ? 2 : 6)) {
    ASSERT_NE(r.finish, FinishReason::Error) << r.error;
    // Nothing but the grammar's own text can come, and the grammar ends well before max_tokens.
    EXPECT_EQ(r.finish, FinishReason::Stop) << text_of(r);
    EXPECT_TRUE(std::regex_match(text_of(r), whole)) << text_of(r);
    EXPECT_EQ(r.text, text_of(r));
    // The last token ends the sequence (end of generation), allowed only once the text was whole.
    ASSERT_FALSE(r.tokens.empty());
    EXPECT_TRUE(model_->tokenizer.is_special(r.tokens.back()));
    ++finished;
  }
  EXPECT_GT(finished, 0);
}

TEST_F(EngineStructured, ChoiceCompletionsAreOneOfTheChoices) {
  StructuredOutputs c;
  c.choice = std::vector<std::string>{"red", "green", "dark blue", "rouge \"vif\""};
  std::set<std::string> seen;
  for (const GenerationResult& r : generate(sampled(c, 8, 3), kUnderSanitizers ? 1 : 4)) {
    EXPECT_EQ(r.finish, FinishReason::Stop);
    EXPECT_TRUE(std::find(c.choice->begin(), c.choice->end(), text_of(r)) != c.choice->end()) << text_of(r);
    seen.insert(text_of(r));
  }
  EXPECT_GT(seen.size(), 1u);  // sampling, not one forced answer
}

TEST_F(EngineStructured, JsonSchemaCompletionsParseAndValidate) {
  StructuredOutputs c;
  c.json = R"({"type": "object", "properties": {
                "id": {"type": "integer", "minimum": 1, "maximum": 999},
                "tag": {"enum": ["a", "b", "c"]},
                "ok": {"type": "boolean"}},
              "required": ["id", "tag", "ok"], "additionalProperties": false})";
  c.compact_whitespace = true;
  int validated = 0;
  for (const GenerationResult& r : generate(sampled(c, 4, 5, 80), kUnderSanitizers ? 1 : 4)) {
    ASSERT_NE(r.finish, FinishReason::Error) << r.error;
    if (r.finish == FinishReason::Length) continue;
    const auto v = nlohmann::ordered_json::parse(text_of(r));
    ASSERT_EQ(v.size(), 3u) << text_of(r);
    EXPECT_EQ(v.begin().key(), "id");  // declared order
    EXPECT_TRUE(v["id"].is_number_integer() && v["id"] >= 1 && v["id"] <= 999) << text_of(r);
    EXPECT_TRUE(v["tag"] == "a" || v["tag"] == "b" || v["tag"] == "c");
    EXPECT_TRUE(v["ok"].is_boolean());
    ++validated;
  }
  EXPECT_GT(validated, 0);
}

TEST_F(EngineStructured, IgnoreEosEndsWhenTheGrammarIsComplete) {
  // ignore_eos lets an end-of-generation token through without ending the sequence, but after a
  // grammar's end nothing can follow: the sequence ends there (it used to fail with "every
  // token is masked").
  StructuredOutputs c;
  c.regex = "[a-z]{2,5}";
  SamplingParams p = sampled(c, 2, 4, 40);
  p.ignore_eos = true;
  for (const GenerationResult& r : generate(p, 2)) {
    EXPECT_EQ(r.finish, FinishReason::Stop) << r.error;
    EXPECT_TRUE(std::regex_match(text_of(r), std::regex("[a-z]{2,5}"))) << text_of(r);
  }
}

TEST_F(EngineStructured, AGrammarSpellingAControlTokenGetsPlainTextNeverTheToken) {
  // A client's grammar is plain text: "</s>" in it is spelled with ordinary tokens, never the
  // vocabulary's control token (which would end the sequence or inject a turn marker).
  StructuredOutputs c;
  c.grammar = R"(root ::= "</s>" [a-z]{1,3})";
  for (const GenerationResult& r : generate(sampled(c, 2, 8), 2)) {
    EXPECT_EQ(r.finish, FinishReason::Stop);
    EXPECT_TRUE(text_of(r).starts_with("</s>")) << text_of(r);
    for (size_t i = 0; i + 1 < r.tokens.size(); ++i) {
      EXPECT_FALSE(model_->tokenizer.is_special(r.tokens[i])) << "token " << r.tokens[i] << " at " << i;
    }
  }
}

TEST_F(EngineStructured, SpeculativeDraftsChangeNothing) {
  StructuredOutputs c;
  c.regex = "(ab|cd)+[0-9]{2,6}";
  for (float temperature : kUnderSanitizers ? std::vector<float>{1.0f} : std::vector<float>{0.0f, 1.0f}) {
    SamplingParams p = sampled(c, 2, 21, 30);
    p.temperature = temperature;
    if (temperature == 0.0f) p.n = 1;
    const std::vector<GenerationResult> plain = generate(p, 2);
    EngineConfig spec = config(512);
    spec.speculative.method = SpeculativeMethod::Ngram;
    spec.speculative.num_speculative_tokens = 4;
    spec.speculative.min_acceptance_rate = 0.0;
    spec.speculative.prompt_lookup_min = 1;  // the grammar's text repeats: drafts are found
    EngineStats stats;
    const std::vector<GenerationResult> drafted = generate(p, 2, spec, &stats);
    EXPECT_GT(stats.spec_drafts, 0u);  // drafts were made, and some were accepted
    EXPECT_GT(stats.spec_accepted_tokens, 0u);
    ASSERT_EQ(plain.size(), drafted.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].tokens, drafted[i].tokens) << "temperature " << temperature << " completion " << i;
      EXPECT_EQ(plain[i].finish, drafted[i].finish);
    }
  }
}

TEST_F(EngineStructured, JumpForwardVerifiesForcedTextInFewerStepsWithTheSameOutput) {
  // Long forced keys: most of the text is forced.
  StructuredOutputs c;
  c.json = R"({"type": "object", "properties": {
                "a_rather_long_property_name": {"type": "boolean"},
                "another_quite_long_property_name": {"enum": ["first value", "second value"]}},
              "required": ["a_rather_long_property_name", "another_quite_long_property_name"]})";
  c.compact_whitespace = true;
  // Under the sanitizers: greedy only (the seeded path is the same code with other draws).
  for (float temperature : kUnderSanitizers ? std::vector<float>{0.0f} : std::vector<float>{0.0f, 1.0f}) {
    // Both keys and the first value fit in 60 tokens (the sanitizers' run stops there).
    SamplingParams p = sampled(c, temperature == 0.0f ? 1 : 3, 17, kUnderSanitizers ? 60 : 120);
    p.temperature = temperature;
    EngineConfig off = config(512);
    off.jump_forward = false;
    EngineStats plain_stats, jump_stats;
    const int prompts = kUnderSanitizers ? 1 : 2;
    const std::vector<GenerationResult> plain = generate(p, prompts, off, &plain_stats);
    const std::vector<GenerationResult> jumped = generate(p, prompts, config(512), &jump_stats);
    ASSERT_EQ(plain.size(), jumped.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i].tokens, jumped[i].tokens) << "temperature " << temperature << " completion " << i;
      if (!kUnderSanitizers) {
        EXPECT_EQ(plain[i].finish, FinishReason::Stop) << text_of(plain[i]);
      }
    }
    EXPECT_EQ(plain_stats.spec_drafts, 0u);
    EXPECT_GT(jump_stats.spec_accepted_tokens, 10u);  // forced tokens verified in a pass
    // This random-weight model splits the forced text into pieces of its own choosing (the
    // grammar allows every split), so fewer drafts are accepted than a trained model's; the
    // real model's gain is measured in BENCHMARKS.md.
    EXPECT_LT(jump_stats.steps, plain_stats.steps);
  }
}

// Proposes the same few tokens for every sequence, whatever it holds.
class FixedProposer final : public spec::Proposer {
 public:
  explicit FixedProposer(std::vector<int32_t> draft) : draft_(std::move(draft)) {}
  void propose(std::span<const spec::DraftRequest> requests) override {
    for (const spec::DraftRequest& r : requests) *r.draft = draft_;
  }

 private:
  std::vector<int32_t> draft_;
};

TEST_F(EngineStructured, DraftsAreCutWhereTheGrammarForbidsThem) {
  StructuredOutputs c;
  c.regex = "[0-9]{12}";
  // Digits only: a draft of letters is cut to nothing before the forward pass, so no draft
  // token is ever scored; a draft of digit tokens is scored.
  auto token_of = [](const std::string& bytes) {
    for (int32_t id = 0; id < static_cast<int32_t>(model_->tokenizer.vocab().size()); ++id) {
      if (!model_->tokenizer.is_special(id) && model_->tokenizer.token_bytes(id) == bytes) return id;
    }
    return int32_t{-1};
  };
  const int32_t letter = token_of("a"), digit = token_of("1");
  ASSERT_GE(letter, 0);
  ASSERT_GE(digit, 0);
  for (const auto& [draft, scored] : {std::pair{std::vector<int32_t>(3, letter), false},
                                      std::pair{std::vector<int32_t>(3, digit), true}}) {
    EngineConfig spec = config(256);
    spec.speculative.method = SpeculativeMethod::Ngram;
    spec.speculative.num_speculative_tokens = 3;
    spec.speculative.min_acceptance_rate = 0.0;
    Engine engine(handle(), spec);
    engine::EngineTestAccess::set_proposer(engine, std::make_unique<FixedProposer>(draft));
    RequestHandle h = engine.add_request(prompt(5, 2), sampled(c, 1, 9));
    drain(engine);
    const GenerationResult r = h.collect();
    EXPECT_EQ(r.finish, FinishReason::Stop);
    EXPECT_EQ(text_of(r).size(), 12u);
    EXPECT_EQ(engine.stats().spec_draft_tokens > 0, scored);
  }
}

TEST_F(EngineStructured, InvalidConstraintsAreTheCallersErrorAndLeaveNothingBehind) {
  Engine engine(handle(), config(64));
  auto submit = [&](StructuredOutputs c) { return engine.add_request(prompt(5, 1), sampled(std::move(c), 1, 1)); };
  StructuredOutputs bad_grammar;
  bad_grammar.grammar = "root ::= \"a\" missing";
  EXPECT_THROW(submit(bad_grammar), grammar::GrammarError);
  StructuredOutputs bad_schema;
  bad_schema.json = R"({"type": "bogus"})";
  EXPECT_THROW(submit(bad_schema), grammar::GrammarError);
  StructuredOutputs not_json;
  not_json.json = "{";
  EXPECT_THROW(submit(not_json), grammar::GrammarError);
  StructuredOutputs bad_regex;
  bad_regex.regex = "(a";
  EXPECT_THROW(submit(bad_regex), grammar::GrammarError);
  StructuredOutputs two;
  two.regex = "a";
  two.grammar = "root ::= \"a\"";
  EXPECT_THROW(submit(two), Error);
  SamplingParams beams = greedy(4);
  beams.use_beam_search = true;
  beams.n = 2;
  beams.structured_outputs.emplace().regex = "a+";
  EXPECT_THROW(engine.add_request_n(prompt(5, 1), beams), Error);
  EXPECT_FALSE(engine.has_unfinished());
  // The engine still serves.
  StructuredOutputs fine;
  fine.regex = "x{3}";
  RequestHandle h = submit(fine);
  drain(engine);
  GenerationResult r = h.collect();
  EXPECT_EQ(r.finish, FinishReason::Stop);
  EXPECT_EQ(text_of(r), "xxx");
}

// Issue 47: an ambiguous nesting whose masks cost more than their budget (grammar/mask_work.h).
// When its very first mask is already over budget, compiling it says so (the client's 400);
// otherwise the mask that goes over ends its request with an error naming the budget, and a
// request beside it is served as if it were alone.
TEST_F(EngineStructured, AGrammarOverItsMaskBudgetEndsOnlyItsRequest) {
  Engine engine(handle(), config(64));
  StructuredOutputs refused_at_once;
  refused_at_once.grammar = "root ::= ([^\\n\\r]{0,40}){0,50}";
  EXPECT_THROW(engine.add_request(prompt(5, 1), sampled(refused_at_once, 1, 1)), grammar::GrammarBudgetError);
  EXPECT_FALSE(engine.has_unfinished());

  StructuredOutputs later;  // one forced byte first: the first mask is cheap
  later.grammar = "root ::= \"x\" ([^\\n\\r]{0,40}){0,50}";
  StructuredOutputs fine;
  fine.regex = "x{3}";
  RequestHandle hostile = engine.add_request(prompt(5, 1), sampled(later, 1, 1, 8));
  RequestHandle ordinary = engine.add_request(prompt(6, 2), sampled(fine, 1, 2));
  drain(engine);
  const GenerationResult h = hostile.collect();
  EXPECT_EQ(h.finish, FinishReason::Error);
  EXPECT_NE(h.error.find("grammar budget exceeded"), std::string::npos) << h.error;
  const GenerationResult o = ordinary.collect();
  EXPECT_EQ(o.finish, FinishReason::Stop) << o.error;
  EXPECT_EQ(text_of(o), "xxx");
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

TEST_F(EngineStructured, MaskCachesShareOneBudgetAndMasksStayRightPastIt) {
  // A budget of 1 byte: the first cache fills it, every later context is computed uncached.
  engine::GrammarCompiler tight(model_->tokenizer, 8, 1);
  engine::GrammarCompiler roomy(model_->tokenizer, 8);
  StructuredOutputs c;
  c.json = R"({"type": "object", "properties": {"a": {"type": "string", "maxLength": 6}, "b": {"type": "integer"}}})";
  c.compact_whitespace = false;  // more grammar states to walk through
  engine::GrammarMask limited(tight.compile(c), model_->tokenizer.vocab().size());
  engine::GrammarMask cached(roomy.compile(c), model_->tokenizer.vocab().size());
  const std::string text = R"({"a": "xyz", "b": 42})";
  std::vector<float> row_a(model_->tokenizer.vocab().size()), row_b(row_a.size());
  for (char ch : text) {
    std::fill(row_a.begin(), row_a.end(), 0.0f);
    std::fill(row_b.begin(), row_b.end(), 0.0f);
    limited.apply(row_a);
    cached.apply(row_b);
    ASSERT_EQ(row_a, row_b) << "at '" << ch << "'";
    int32_t token = -1;  // the single-byte token of this character
    for (int32_t id = 0; id < static_cast<int32_t>(row_a.size()) && token < 0; ++id) {
      if (!model_->tokenizer.is_special(id) && model_->tokenizer.token_bytes(id) == std::string(1, ch)) token = id;
    }
    ASSERT_GE(token, 0);
    limited.accept(token);
    cached.accept(token);
  }
}

// A server's own constraint may write the control tokens it names (gpt-oss's harmony markers in
// a tool call); a constraint that names none, as every client's, never allows one.
TEST_F(EngineStructured, AConstraintWritesOnlyTheControlTokensItNames) {
  const auto& tokenizer = model_->tokenizer;
  // A control token that does not end generation, with a text a GBNF literal can hold as it is.
  const auto& ends = tokenizer.vocab().end_of_generation;
  int32_t im_start = -1;
  std::string im_start_text;
  for (int32_t id = 0; id < static_cast<int32_t>(tokenizer.vocab().size()) && im_start < 0; ++id) {
    const std::string text = tokenizer.token_bytes(id);
    if (tokenizer.is_special(id) && std::find(ends.begin(), ends.end(), id) == ends.end() && text.size() > 1 &&
        text.find_first_of("\"\\") == std::string::npos) {
      im_start = id;
      im_start_text = text;
    }
  }
  ASSERT_GE(im_start, 0);
  engine::GrammarCompiler compiler(tokenizer, 8);
  StructuredOutputs plain;
  plain.grammar = "root ::= \"" + im_start_text + "user\"";
  StructuredOutputs marked = plain;
  marked.control_tokens = {im_start_text, "<|no such token|>"};
  const auto plain_grammar = compiler.compile(plain);
  const auto marked_grammar = compiler.compile(marked);
  EXPECT_NE(plain_grammar, marked_grammar);  // cached apart
  EXPECT_EQ(compiler.compile(marked), marked_grammar);
  std::vector<float> row(tokenizer.vocab().size(), 0.0f);
  engine::GrammarMask without(plain_grammar, row.size());
  without.apply(row);
  EXPECT_EQ(row[static_cast<size_t>(im_start)], -std::numeric_limits<float>::infinity());
  std::fill(row.begin(), row.end(), 0.0f);
  engine::GrammarMask with(marked_grammar, row.size());
  with.apply(row);
  EXPECT_EQ(row[static_cast<size_t>(im_start)], 0.0f);
  // After the control token the grammar goes on with its text; no other control token is allowed.
  with.accept(im_start);
  std::fill(row.begin(), row.end(), 0.0f);
  with.apply(row);
  for (int32_t id = 0; id < static_cast<int32_t>(row.size()); ++id) {
    if (tokenizer.is_special(id))
      EXPECT_EQ(row[static_cast<size_t>(id)], -std::numeric_limits<float>::infinity()) << id;
  }
}

TEST_F(EngineStructured, CompiledGrammarsAreCachedAndEvicted) {
  engine::GrammarCompiler compiler(model_->tokenizer, 2);
  StructuredOutputs a, b, c;
  a.regex = "a+";
  b.regex = "b+";
  c.regex = "c+";
  const auto first = compiler.compile(a);
  EXPECT_EQ(compiler.compile(a), first);  // the same text: the same compiled grammar
  compiler.compile(b);
  compiler.compile(c);  // evicts a, the least recently used
  EXPECT_EQ(compiler.cached(), 2u);
  EXPECT_NE(compiler.compile(a), first);
  EXPECT_EQ(compiler.compile(StructuredOutputs{}), nullptr);
}

}  // namespace
}  // namespace lumen::testing
