#pragma once
// Fair shares of the engine's seats (max_num_seqs) between clients (Sequence::client).
//
// Without them one client with many sequences (30 requests x n = 16, all within its admission
// places) takes every seat, and another client's one short request waits behind all of them.
// The rule, while some other client has a sequence waiting:
//   - a client may hold at most share = max(1, max_num_seqs / active clients) seats, active
//     meaning holding a seat or waiting for one; a sequence beyond that share waits;
//   - a client holding no seat may always start one request, so a request wider than the share
//     (n = 16 among many clients) still runs;
//   - the scheduler preempts the seats a client holds beyond its share when another client's
//     request is entitled to one and none is free (Scheduler::preempt_for_fairness), so the
//     other client waits about one step, not until the first client's requests end.
// With no other client waiting, a client may use every free seat (no seat idles). A single
// client (every caller that does not say, client 0) therefore schedules exactly as before.
#include <cstdint>
#include <span>
#include <unordered_map>

#include "engine/sequence.h"

namespace lumen::engine {

class ClientSeats {
 public:
  explicit ClientSeats(int64_t max_num_seqs) : max_num_seqs_(max_num_seqs) {}

  // Counts, from scratch, the seats each client holds and the sequences it has waiting.
  void count(std::span<Sequence* const> running, std::span<Sequence* const> waiting);
  // A waiting sequence was admitted, or a running one went back to waiting (preemption).
  void admitted(const Sequence& seq);
  void preempted(const Sequence& seq);

  int64_t share() const;
  int64_t held(uint64_t client) const;
  // Within the share, or the client's first request: others' waiting cannot hold it back.
  bool entitled(const Sequence& seq) const;
  // Whether fairness lets `seq` take a seat now (free seats permitting): entitled, or no other
  // client is waiting.
  bool may_admit(const Sequence& seq) const;
  // Whether `client` holds more seats than its share.
  bool over_share(uint64_t client) const { return held(client) > share(); }
  // Whether a client other than `client` has a sequence waiting.
  bool others_waiting(uint64_t client) const;

 private:
  struct Counts {
    int64_t seats = 0;    // held by its running sequences
    int64_t waiting = 0;  // its waiting sequences
  };

  int64_t max_num_seqs_;
  std::unordered_map<uint64_t, Counts> clients_;  // only clients with work
  int64_t clients_waiting_ = 0;                   // clients with a sequence waiting
};

}  // namespace lumen::engine
