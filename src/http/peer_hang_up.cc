#include "http/peer_hang_up.h"

#include <poll.h>
#include <sys/socket.h>

#include <cerrno>

namespace lumen::http {

bool peer_hung_up(int socket) {
  // POLLRDHUP says the peer sent its FIN even when bytes it sent before (a pipelined next
  // request) are still unread, which a peek would see first and take for a live client.
  pollfd p{socket, POLLIN | POLLRDHUP, 0};
  if (poll(&p, 1, 0) <= 0) return false;
  if ((p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) != 0) return true;
  char byte;
  const ssize_t got = recv(socket, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (got == 0) return true;
  return got < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;
}

}  // namespace lumen::http
