// Remote image URLs (server/image_fetch.h) against a local HTTP server: the body of a 200 image
// comes back; every bound and failure is a 400 (size by header and by streamed data, time,
// status, content type, a redirect to another host), and a redirect within the host is followed.
#include <gtest/gtest.h>

#include <httplib.h>

#include <chrono>
#include <string>
#include <thread>

#include "server/api_error.h"
#include "server/image_fetch.h"

namespace lumen::server {
namespace {

class ImageFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/cat.png",
                [](const httplib::Request&, httplib::Response& r) { r.set_content("PNGDATA", "image/png"); });
    server_.Get("/big.png", [](const httplib::Request&, httplib::Response& r) {
      r.set_content(std::string(4096, 'x'), "image/png");
    });
    server_.Get("/stream.png", [](const httplib::Request&, httplib::Response& r) {
      // No Content-Length: the bound must hold on the data as it arrives.
      r.set_chunked_content_provider("image/png", [](size_t, httplib::DataSink& sink) {
        const std::string chunk(1024, 'y');
        for (int i = 0; i < 8; ++i) {
          if (!sink.write(chunk.data(), chunk.size())) return false;
        }
        sink.done();
        return true;
      });
    });
    server_.Get("/slow.png", [](const httplib::Request&, httplib::Response& r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1500));
      r.set_content("late", "image/png");
    });
    server_.Get("/page", [](const httplib::Request&, httplib::Response& r) { r.set_content("<html>", "text/html"); });
    server_.Get("/moved", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/cat.png"); });
    server_.Get("/away", [this](const httplib::Request&, httplib::Response& r) {
      r.set_redirect("http://localhost:" + std::to_string(port_) + "/cat.png");
    });
    server_.Get("/loop", [](const httplib::Request&, httplib::Response& r) { r.set_redirect("/loop"); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }
  std::string refusal(const std::string& path, const ImageFetchLimits& limits) const {
    try {
      fetch_image(url(path), limits);
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400) << path;
      return e.what();
    }
    ADD_FAILURE() << path << " was fetched";
    return {};
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

TEST_F(ImageFetch, FetchesWithinTheBounds) {
  ImageFetchLimits limits;
  limits.max_bytes = 1024;
  limits.timeout = std::chrono::milliseconds(500);
  EXPECT_EQ(fetch_image(url("/cat.png"), limits), "PNGDATA");
  EXPECT_EQ(fetch_image(url("/moved"), limits), "PNGDATA");  // same host
  EXPECT_NE(refusal("/big.png", limits).find("--max-image-bytes"), std::string::npos);
  EXPECT_NE(refusal("/stream.png", limits).find("--max-image-bytes"), std::string::npos);
  EXPECT_NE(refusal("/slow.png", limits).find("longer than 500 ms"), std::string::npos);
  EXPECT_NE(refusal("/page", limits).find("not an image"), std::string::npos);
  EXPECT_NE(refusal("/missing.png", limits).find("404"), std::string::npos);
  EXPECT_NE(refusal("/away", limits).find("another host"), std::string::npos);
  EXPECT_NE(refusal("/loop", limits).find("too many times"), std::string::npos);
}

}  // namespace
}  // namespace lumen::server
