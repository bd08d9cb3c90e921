// engine::make_backend, which every command's --device goes through (bench profile's too): "cpu"
// makes the CPU backend; anything but "cpu", "cuda" and "cuda:N" (at most four digits) is
// refused with a message naming the value, before any device is touched.
#include "engine/device.h"

#include <gtest/gtest.h>

#include <string>

#include "util/error.h"

namespace lumen::engine {
namespace {

std::string refusal(const std::string& device) {
  try {
    make_backend(device, 1);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MakeBackend, CpuIsTheCpuBackend) { EXPECT_EQ(make_backend("cpu", 1)->name(), "cpu"); }

TEST(MakeBackend, RefusesMalformedDevicesByName) {
  EXPECT_NE(refusal("gpu").find("unknown device 'gpu'"), std::string::npos);
  EXPECT_NE(refusal("").find("unknown device ''"), std::string::npos);
  EXPECT_NE(refusal("CPU").find("unknown device"), std::string::npos);
  for (const std::string bad : {"cuda:", "cuda:x", "cuda:-1", "cuda:12345", "cuda:1 "}) {
    EXPECT_NE(refusal(bad).find("is not cuda:N"), std::string::npos) << bad;
  }
  // A well-formed CUDA device: refused by a build without CUDA, or on a machine without that
  // device, never accepted silently.
  EXPECT_FALSE(refusal("cuda:9999").empty());
}

}  // namespace
}  // namespace lumen::engine
