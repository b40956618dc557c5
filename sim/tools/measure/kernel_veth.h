// A veth pair between two network namespaces that only this process holds:
// the path of `measure kernel --path veth`. The sender's namespace has one
// end (10.231.0.1/30), the receiver's the other (10.231.0.2/30). Nothing is
// registered by name (no /var/run/netns entry), so when the process ends,
// however it ends, the namespaces lose their last reference and the kernel
// deletes them with the pair: nothing of it is left on the host.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>

namespace simloop::measure {

class VethPair {
 public:
  // The ends' MTU (veth's default is 1500). Needs root; throws
  // std::runtime_error saying what failed. The calling thread is back in its
  // own namespace when this returns or throws.
  explicit VethPair(int mtu);
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

  // A datagram socket created in the sender's or the receiver's namespace
  // (a socket stays in the namespace it was created in); throws.
  int sender_socket() const;
  int receiver_socket() const;

  int mtu() const { return mtu_; }
  static in_addr_t sender_addr();     // 10.231.0.1, network order
  static in_addr_t receiver_addr();   // 10.231.0.2
  static in_addr_t broadcast_addr();  // 10.231.0.3, the /30's broadcast

  // Why this process cannot build the pair, or "" when it can: root, the ip
  // program of iproute2, and a new network namespace allowed here.
  static std::string unavailable();

 private:
  int socket_in(int ns) const;
  int mtu_ = 1500;
  int home_ = -1, tx_ = -1, rx_ = -1;  // namespace file descriptors
};

}  // namespace simloop::measure
