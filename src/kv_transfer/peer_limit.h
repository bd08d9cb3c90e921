#pragma once
// A cap on the connections a KV-transfer server holds at once. libzmq accepts every TCP
// connection and has no option to refuse past a number; each costs a session and, while a frame
// arrives, that frame's announced size (up to the socket's ZMQ_MAXMSGSIZE). So the server
// watches its socket's monitor: it counts each accepted connection until libzmq reports it
// closed, and shuts down (shutdown(2), libzmq then closes it) a connection accepted past the cap.
// A decode instance opens one connection per fetch, so the cap is the fetches in flight at once;
// one past it fails and its prompt is computed on the decode side.
#include <cstddef>
#include <string>
#include <unordered_set>

#include <zmq.hpp>

namespace lumen::kv_transfer {

class PeerLimit {
 public:
  // Starts monitoring `router` (bound, tcp://) through an inproc PAIR socket of its own.
  PeerLimit(zmq::socket_t& router, size_t max_peers);

  // The socket to poll for events; handle_events() reads what is waiting.
  zmq::socket_t& events() { return monitor_; }
  void handle_events();
  // Detaches the monitor from `router` (the socket given at construction); call it on the
  // router's thread before either socket closes. libzmq's I/O thread sends each event with a
  // blocking send: with no reader left it would block, and every socket it serves with it.
  void stop(zmq::socket_t& router);

  size_t peers() const { return open_.size(); }

 private:
  void accepted(int fd);

  size_t max_peers_;
  int port_ = -1;  // the router's TCP port: an fd is shut down only while it is still ours
  zmq::socket_t monitor_;
  std::unordered_set<int> open_;
};

}  // namespace lumen::kv_transfer
