#include "engine/client_seats.h"

#include <algorithm>

namespace lumen::engine {

void ClientSeats::count(std::span<Sequence* const> running, std::span<Sequence* const> waiting) {
  clients_.clear();
  clients_waiting_ = 0;
  for (const Sequence* seq : running) clients_[seq->client].seats += seq->seats;
  for (const Sequence* seq : waiting) {
    if (clients_[seq->client].waiting++ == 0) ++clients_waiting_;
  }
}

void ClientSeats::admitted(const Sequence& seq) {
  Counts& c = clients_[seq.client];
  c.seats += seq.seats;
  if (c.waiting > 0 && --c.waiting == 0) --clients_waiting_;
}

void ClientSeats::preempted(const Sequence& seq) {
  Counts& c = clients_[seq.client];
  c.seats = std::max<int64_t>(0, c.seats - seq.seats);
  if (c.waiting++ == 0) ++clients_waiting_;
}

int64_t ClientSeats::share() const {
  const auto active = std::max<int64_t>(1, static_cast<int64_t>(clients_.size()));
  return std::max<int64_t>(1, max_num_seqs_ / active);
}

int64_t ClientSeats::held(uint64_t client) const {
  auto it = clients_.find(client);
  return it == clients_.end() ? 0 : it->second.seats;
}

bool ClientSeats::entitled(const Sequence& seq) const {
  const int64_t h = held(seq.client);
  return h == 0 || h + seq.seats <= share();
}

bool ClientSeats::may_admit(const Sequence& seq) const { return entitled(seq) || !others_waiting(seq.client); }

bool ClientSeats::others_waiting(uint64_t client) const {
  auto it = clients_.find(client);
  const bool self_waiting = it != clients_.end() && it->second.waiting > 0;
  return clients_waiting_ > (self_waiting ? 1 : 0);
}

}  // namespace lumen::engine
