// The UDP transmit and loopback path of a FreeBSD-6-like host, functional
// only: it knows nothing of time. It builds real packets in real mbufs with
// real checksums, and reports what it does through its probe.
//
// Interfaces: lo0 (127.0.0.1/8) and em0 (10.0.0.1/24, simplex, broadcast
// 10.0.0.255) whose transmit ring leads to a peer at 10.0.0.2. Input runs
// when the owner calls netisr_run(); frames leave the ring when the owner
// calls nic_txeof(). Both are the owner's choice of when, which is what lets
// the simulator put them on other actors and the native harness inline.
#pragma once

#include <array>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/stack/bsd/fns.h"
#include "sim/stack/bsd/mbuf_ops.h"
#include "sim/stack/net/counters.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/net/stack_concept.h"

namespace simloop::net::bsd {

struct StackOptions {
  AlignPolicy align = AlignPolicy::none;
  LoopCopy loop_copy = LoopCopy::m_copy;
  int max_linkhdr = 16;  // link header space reserved in front of the data
  int max_protohdr = 40;
  int netisr_maxlen = 256;  // net.inet.ip.intr_queue_maxlen
  int nic_ring = 256;       // transmit descriptors
  int so_sndbuf = 9216;     // net.inet.udp.maxdgram
  int so_rcvbuf = 41600;    // net.inet.udp.recvspace
  int ether_mtu = 1500;
  int loop_mtu = 16384;
  bool useloopback = true;  // route our own address via lo0 (else em0's to-self loop)
  // Bytes past a 4-byte boundary of udp_in, the static struct sockaddr_in
  // that udp_input fills with each datagram's source. struct sockaddr asks
  // for no alignment, so the link may misplace one (FreeBSD's sun_noname).
  int sockaddr_misalign = 0;
};

inline constexpr uint32_t IFF_BROADCAST = 0x2;
inline constexpr uint32_t IFF_LOOPBACK = 0x8;
inline constexpr uint32_t IFF_SIMPLEX = 0x800;

using MacAddr = std::array<uint8_t, kEtherAddrLen>;

struct Ifnet {
  std::string name;
  uint32_t flags = 0;
  int mtu = 0;
  MacAddr mac{};
  uint32_t addr = 0;
  uint64_t opackets = 0, obytes = 0, ipackets = 0;
};

// A misaligned header access on a strict-alignment CPU: the 2006 arm panic,
// as a value instead of a crash.
struct AlignmentFault {
  bsd::Fn fn;
  const char* field;
  unsigned size;       // access width in bytes
  const char* buffer;  // what holds the field: "mbuf", "cluster" or "udp_in"
  int offset;          // where in that buffer (no host address: results must repeat)
  unsigned misalign;   // the access's address mod 4
  int header_offset;   // offset of the IP header within its buffer; -1: not a packet
  std::string describe() const;
};

// A FIFO of packets linked by m_nextpkt, bounded by `maxlen` packets.
struct PacketQueue {
  Mbuf* head = nullptr;
  Mbuf* tail = nullptr;
  int len = 0;
  int maxlen = 0;
  bool full() const { return len >= maxlen; }
  void push(Mbuf* m) {
    m->m_nextpkt = nullptr;
    if (tail != nullptr)
      tail->m_nextpkt = m;
    else
      head = m;
    tail = m;
    ++len;
  }
  Mbuf* pop() {
    Mbuf* m = head;
    if (m == nullptr) return nullptr;
    head = m->m_nextpkt;
    if (head == nullptr) tail = nullptr;
    m->m_nextpkt = nullptr;
    --len;
    return m;
  }
};

// A bound UDP socket and its receive buffer (records: address mbuf + data).
struct Socket {
  bool open = false;
  uint32_t laddr = 0;  // 0: any
  uint16_t lport = 0;
  PacketQueue rcv;
  int rcv_cc = 0;  // bytes in the receive buffer, as sbspace() counts them
  uint64_t received = 0, received_bytes = 0;
};

template <class P>
class Stack {
 public:
  using Fn = bsd::Fn;  // the functions it reports, by FnId (net/bsd_fns.h)
  static constexpr const FnTable& fn_table() { return bsd::fn_table(); }

  using Options = StackOptions;

  // On `pool`, which outlives the stack (tests look at it afterwards)...
  Stack(MbufPool& pool, P& probe, StackOptions opt = {});
  // ... or on a pool of its own.
  explicit Stack(P& probe, StackOptions opt = {})
      : Stack(std::make_unique<MbufPool>(), probe, opt) {}
  ~Stack();
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  // Sockets. Return a descriptor, or -1 when out of sockets.
  int socket();
  int bind(int s, uint32_t addr, uint16_t port);
  void close(int s);

  // sendto(): 0, or ENOBUFS, EMSGSIZE, EHOSTUNREACH, EBADF, or EFAULT when a
  // header store faulted on a strict-alignment CPU (the packet is dropped).
  int sendto(int s, const void* buf, int len, uint32_t dst, uint16_t dport);
  // recvfrom(): 0 and the datagram (truncated to maxlen), or EWOULDBLOCK.
  int recvfrom(int s, void* buf, int maxlen, int* got, uint32_t* src = nullptr,
               uint16_t* sport = nullptr);

  // Runs the netisr for up to `max` queued packets; returns how many ran.
  int netisr_run(int max = INT_MAX);
  int netisr_pending() const { return netisr_.len; }

  // Transmit completion: frees up to `max` frames from the NIC ring.
  int nic_txeof(int max = INT_MAX);
  int nic_pending() const { return nic_.len; }
  const Mbuf* nic_frame(int i) const;  // i-th frame waiting in the ring

  const std::optional<AlignmentFault>& fault() const { return fault_; }
  const StackCounters& counters() const { return counters_; }
  const Socket& sock(int s) const { return sockets_.at(s); }
  int rcv_queued(int s) const { return sock(s).rcv.len; }
  const StackOptions& options() const { return opt_; }
  const Ifnet& loop_if() const { return lo0_; }
  const Ifnet& ether_if() const { return em0_; }
  Mbufs<P>& mbufs() { return mb_; }
  int max_hdr() const { return opt_.max_linkhdr + opt_.max_protohdr; }

 private:
  static constexpr int kMaxSockets = 16;

  int sosend_dgram(Socket& so, const void* buf, int len, uint32_t dst, uint16_t dport);
  int udp_output(Socket& so, Mbuf* m, uint32_t dst, uint16_t dport);
  int ip_output(Mbuf* m, Ifnet* ifp, uint32_t src, uint32_t dst, bool bcast);
  int looutput(Ifnet* ifp, Mbuf* m);
  int ether_output(Ifnet* ifp, Mbuf* m, uint32_t dst, bool bcast);
  int ether_output_frame(Ifnet* ifp, Mbuf* m);
  int if_simloop(Ifnet* ifp, Mbuf* m, int hlen);
  Mbuf* align_fixup(Mbuf* m);
  void ip_input(Mbuf* m);
  void udp_input(Mbuf* m, int iphlen, uint32_t src, uint32_t dst);
  void sbappendaddr(Socket& so, Mbuf* m);
  void drop(Drop where, Mbuf* m);
  int drop_faulted(Mbuf* m);

  // Header access with the target's alignment rules. A misaligned access on
  // a strict CPU records the fault, sets trap_, reads as zero and does not
  // store; callers check trap_ after a header and drop the packet.
  bool strict_cpu() const { return opt_.align == AlignPolicy::strict; }
  bool check_access(Fn fn, const Mbuf* m, int off, unsigned size, bool write, const char* field);
  [[noreturn, gnu::cold, gnu::noinline]] void read_only_write(Fn fn);
  [[gnu::cold, gnu::noinline]] bool misaligned_access(Fn fn, const Mbuf* m, const uint8_t* p,
                                                      unsigned size, const char* field);
  // The same for a field of udp_in (static storage, not in a packet).
  bool check_udp_in_access(Fn fn, int off, unsigned size, bool write, const char* field);
  // Records the first fault and sets trap_; returns false. `base` is the
  // start of the buffer `buffer` that holds `p`.
  bool record_fault(Fn fn, const uint8_t* p, unsigned size, const char* field, int header_offset,
                    const uint8_t* base, const char* buffer);
  uint8_t ld8(Fn fn, const Mbuf* m, int off, const char* field);
  uint16_t ld16(Fn fn, const Mbuf* m, int off, const char* field);
  uint32_t ld32(Fn fn, const Mbuf* m, int off, const char* field);
  void st8(Fn fn, Mbuf* m, int off, uint8_t v, const char* field);
  void st16(Fn fn, Mbuf* m, int off, uint16_t v, const char* field);
  void st32(Fn fn, Mbuf* m, int off, uint32_t v, const char* field);

  bool is_local(uint32_t dst) const;
  const MacAddr* arp_lookup(uint32_t dst) const;

  Stack(std::unique_ptr<MbufPool> own, P& probe, StackOptions opt);
  void init();

  std::unique_ptr<MbufPool> own_pool_;  // when it has a pool of its own
  StackOptions opt_;
  P& probe_;
  Mbufs<P> mb_;
  Ifnet lo0_;
  Ifnet em0_;
  MacAddr peer_mac_{};
  PacketQueue netisr_;
  PacketQueue nic_;
  std::array<Socket, kMaxSockets> sockets_{};
  // udp_in lies sockaddr_misalign bytes into this storage, which starts a
  // cache line, so whether an access crosses a line never depends on where
  // the stack was allocated.
  alignas(64) std::array<uint8_t, 64> udp_in_storage_{};
  uint8_t* udp_in() { return udp_in_storage_.data() + opt_.sockaddr_misalign; }
  uint16_t ip_id_ = 1;
  uint16_t next_port_ = 49152;
  bool trap_ = false;
  std::optional<AlignmentFault> fault_;
  StackCounters counters_;
};

}  // namespace simloop::net::bsd

#include "sim/stack/bsd/stack_impl.h"

namespace simloop::net::bsd {
static_assert(UdpStack<Stack<NullProbe>>);

extern template class Stack<NullProbe>;
extern template class Stack<NoProbe>;
extern template class Stack<CountingProbe>;
}  // namespace simloop::net::bsd
