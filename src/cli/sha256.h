#pragma once
// SHA-256 through OpenSSL's EVP interface, fed in pieces (a download, a zip member being
// extracted) or over a whole file.
#include <cstddef>
#include <memory>
#include <string>

namespace lumen::cli {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void update(const void* data, size_t size);
  std::string hex();  // lowercase; finishes the digest

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Throws lumen::Error when the file cannot be read.
std::string sha256_of_file(const std::string& path);

}  // namespace lumen::cli
