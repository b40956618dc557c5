// A small kernel-bypass UDP stack: the process owns a pool of frame
// buffers and a transmit ring, builds each datagram's Ethernet, IP and UDP
// headers itself and polls the ring for completions. Loopback frames go to
// a receive ring the process polls too. Functional only, like every stack:
// it knows nothing of time, and reports what it does to its probe.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "sim/stack/net/counters.h"
#include "sim/stack/net/host.h"
#include "sim/stack/net/inet.h"
#include "sim/stack/net/probe.h"
#include "sim/stack/net/stack_concept.h"
#include "tests/stacks/poll/fns.h"

namespace simloop::net::poll {

struct Options {
  int ring = 256;       // transmit descriptors
  int buffers = 512;    // frame buffers in the pool
  int mtu = 1500;       // of the device
  int rx_ring = 256;    // the looped-back receive ring
  int rx_queue = 1024;  // datagrams a socket holds
};

// The device's transmit counters, as the native loop reads them.
struct Device {
  uint64_t opackets = 0, obytes = 0;
};

// No strict-alignment CPU here: never a fault.
struct Fault {
  std::string describe() const { return ""; }
};

template <class P>
class Stack {
 public:
  using Options = poll::Options;
  static const FnTable& fn_table() { return kFnTable; }

  Stack(P& probe, Options o = {}) : probe_(probe), opt_(o) {
    const size_t frame = static_cast<size_t>(kEtherHdrLen + opt_.mtu);
    storage_.resize(static_cast<size_t>(opt_.buffers) * frame);
    for (int i = opt_.buffers - 1; i >= 0; --i)
      free_.push_back(storage_.data() + static_cast<size_t>(i) * frame);
  }
  Stack(const Stack&) = delete;
  Stack& operator=(const Stack&) = delete;

  int socket() {
    sockets_.push_back({});
    return static_cast<int>(sockets_.size()) - 1;
  }
  int bind(int s, uint32_t /*addr*/, uint16_t port) {
    if (!valid(s)) return EBADF;
    sockets_[static_cast<size_t>(s)].port = port;
    return 0;
  }

  int sendto(int s, const void* data, int len, uint32_t addr, uint16_t port) {
    FnScope<P> scope(probe_, Fn::pkt_send);
    if (!valid(s)) return EBADF;
    if (len < 0 || len + kUdpIpHdrLen > opt_.mtu) return EMSGSIZE;
    if (addr != kLoopAddr && addr != kPeerAddr) return ENETUNREACH;
    if (free_.empty() || static_cast<int>(tx_.size()) >= opt_.ring) {
      ++counters_.send_errors;
      SIMLOOP_PROBE(drop(Drop::nic_full));
      ++counters_.drops[static_cast<size_t>(Drop::nic_full)];
      return ENOBUFS;
    }
    uint8_t* f = free_.back();
    free_.pop_back();
    SIMLOOP_PROBE(alloc(Obj::skb_head, f));
    const int flen = fill(f, data, len, sockets_[static_cast<size_t>(s)].port, addr, port);
    if (addr == kLoopAddr) {
      // The loopback ring takes the frame at once; its buffer is free again.
      loop_back({f, flen});
      SIMLOOP_PROBE(free(Obj::skb_head, f));
      free_.push_back(f);
    } else {
      FnScope<P> post(probe_, Fn::ring_post);
      SIMLOOP_PROBE(header(static_cast<FnId>(Fn::ring_post), f, 4, false));
      tx_.push_back({f, flen});
    }
    ++counters_.sent;
    return 0;
  }

  int recvfrom(int s, void* buf, int len, int* got) {
    FnScope<P> scope(probe_, Fn::pkt_recv);
    auto& q = sockets_.at(static_cast<size_t>(s)).queue;
    if (q.empty()) return EWOULDBLOCK;
    const std::vector<uint8_t>& d = q.front();
    const int n = std::min(len, static_cast<int>(d.size()));
    SIMLOOP_PROBE(copy(CopyKind::uiomove, d.data(), buf, static_cast<size_t>(n)));
    std::memcpy(buf, d.data(), static_cast<size_t>(n));
    *got = n;
    q.pop_front();
    return 0;
  }
  int rcv_queued(int s) const {
    return static_cast<int>(sockets_.at(static_cast<size_t>(s)).queue.size());
  }

  // The receive ring, polled: each looped-back frame's headers checked and
  // its payload queued on the socket bound to its port.
  int netisr_run(int n) {
    if (rx_.empty()) return 0;
    FnScope<P> scope(probe_, Fn::rx_poll);
    int done = 0;
    for (; done < n && !rx_.empty(); ++done) {
      std::vector<uint8_t> frame = std::move(rx_.front());
      rx_.pop_front();
      ++counters_.netisr_processed;
      deliver(frame);
    }
    return done;
  }
  int netisr_pending() const { return static_cast<int>(rx_.size()); }

  // Transmit completion, polled: up to n finished descriptors reaped, their
  // buffers back in the pool.
  int nic_txeof(int n) {
    FnScope<P> scope(probe_, Fn::ring_poll, tx_.empty() ? Call::idle : Call::work);
    int done = 0;
    for (; done < n && !tx_.empty(); ++done) {
      const Desc d = tx_.front();
      tx_.pop_front();
      ++dev_.opackets;
      dev_.obytes += static_cast<uint64_t>(d.len);
      SIMLOOP_PROBE(free(Obj::skb_head, d.frame));
      free_.push_back(d.frame);
    }
    return done;
  }
  int nic_pending() const { return static_cast<int>(tx_.size()); }

  const StackCounters& counters() const { return counters_; }
  const std::optional<Fault>& fault() const { return fault_; }
  const Device& ether_if() const { return dev_; }

 private:
  struct Socket {
    uint16_t port = 0;
    std::deque<std::vector<uint8_t>> queue;
  };
  struct Desc {
    uint8_t* frame;
    int len;
  };

  bool valid(int s) const { return s >= 0 && static_cast<size_t>(s) < sockets_.size(); }

  int fill(uint8_t* f, const void* data, int len, uint16_t sport, uint32_t dst, uint16_t dport) {
    FnScope<P> scope(probe_, Fn::pkt_fill);
    uint8_t* ip = f + kEtherHdrLen;
    uint8_t* udp = ip + kIpHdrLen;
    std::memset(f, 0, kEtherHdrLen + kUdpIpHdrLen);
    store_be16(f + ether::kType, kEtherTypeIp);
    ip[ip::kVhl] = 0x45;
    ip[ip::kTtl] = 64;
    ip[ip::kProto] = kIpProtoUdp;
    store_be16(ip + ip::kLen, static_cast<uint16_t>(kUdpIpHdrLen + len));
    store_be16(ip + ip::kId, ip_id_++);
    const uint32_t src = dst == kLoopAddr ? kLoopAddr : kHostAddr;
    store_be32(ip + ip::kSrc, src);
    store_be32(ip + ip::kDst, dst);
    const uint16_t isum = cksum_finish(cksum_add(ip, kIpHdrLen));
    std::memcpy(ip + ip::kSum, &isum, 2);
    SIMLOOP_PROBE(header(static_cast<FnId>(Fn::pkt_fill), ip, 4, true));
    store_be16(udp + udp::kSport, sport);
    store_be16(udp + udp::kDport, dport);
    store_be16(udp + udp::kUlen, static_cast<uint16_t>(kUdpHdrLen + len));
    SIMLOOP_PROBE(copy(CopyKind::uiomove, data, udp + kUdpHdrLen, static_cast<size_t>(len)));
    if (len > 0) std::memcpy(udp + kUdpHdrLen, data, static_cast<size_t>(len));
    // The UDP checksum over the pseudo-header, header and payload.
    SIMLOOP_PROBE(cksum(udp, static_cast<size_t>(kUdpHdrLen + len)));
    uint64_t sum = cksum_pseudo(src, dst, kIpProtoUdp, static_cast<uint16_t>(kUdpHdrLen + len));
    uint16_t usum = cksum_finish(cksum_add(udp, kUdpHdrLen + len, sum));
    if (usum == 0) usum = 0xffff;
    std::memcpy(udp + udp::kSum, &usum, 2);
    return kEtherHdrLen + kUdpIpHdrLen + len;
  }

  void loop_back(const Desc& d) {
    if (static_cast<int>(rx_.size()) >= opt_.rx_ring) {
      ++counters_.drops[static_cast<size_t>(Drop::netisr_full)];
      SIMLOOP_PROBE(drop(Drop::netisr_full));
      return;
    }
    ++counters_.looped;
    rx_.emplace_back(d.frame, d.frame + d.len);
  }

  void deliver(const std::vector<uint8_t>& frame) {
    const uint8_t* ip = frame.data() + kEtherHdrLen;
    const uint8_t* udp = ip + kIpHdrLen;
    const int ulen = load_be16(udp + udp::kUlen);
    if (cksum_fold(cksum_add(ip, kIpHdrLen)) != 0xffff ||
        cksum_fold(cksum_add(udp, ulen,
                             cksum_pseudo(load_be32(ip + ip::kSrc), load_be32(ip + ip::kDst),
                                          kIpProtoUdp, static_cast<uint16_t>(ulen)))) != 0xffff) {
      ++counters_.drops[static_cast<size_t>(Drop::bad_header)];
      SIMLOOP_PROBE(drop(Drop::bad_header));
      return;
    }
    const uint16_t port = load_be16(udp + udp::kDport);
    for (auto& s : sockets_) {
      if (s.port != port) continue;
      if (static_cast<int>(s.queue.size()) >= opt_.rx_queue) {
        ++counters_.drops[static_cast<size_t>(Drop::sockbuf_full)];
        SIMLOOP_PROBE(drop(Drop::sockbuf_full));
        return;
      }
      s.queue.emplace_back(udp + kUdpHdrLen, udp + ulen);
      ++counters_.delivered;
      counters_.delivered_bytes += static_cast<uint64_t>(ulen - kUdpHdrLen);
      return;
    }
    ++counters_.drops[static_cast<size_t>(Drop::no_port)];
    SIMLOOP_PROBE(drop(Drop::no_port));
  }

  P& probe_;
  Options opt_;
  std::vector<uint8_t> storage_;
  std::vector<uint8_t*> free_;
  std::deque<Desc> tx_;
  std::deque<std::vector<uint8_t>> rx_;
  std::vector<Socket> sockets_;
  StackCounters counters_;
  Device dev_;
  std::optional<Fault> fault_;
  uint16_t ip_id_ = 1;
};

static_assert(UdpStack<Stack<NullProbe>>);

}  // namespace simloop::net::poll
