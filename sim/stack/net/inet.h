// Internet and Ethernet header layouts, byte order, and the Internet checksum.
#pragma once

#include <cstdint>
#include <cstring>

namespace simloop::net {

inline constexpr int kEtherHdrLen = 14;
inline constexpr int kEtherAddrLen = 6;
inline constexpr uint16_t kEtherTypeIp = 0x0800;
inline constexpr int kIpHdrLen = 20;  // without options
inline constexpr int kUdpHdrLen = 8;
inline constexpr int kUdpIpHdrLen = kIpHdrLen + kUdpHdrLen;  // struct udpiphdr
inline constexpr uint8_t kIpProtoUdp = 17;
inline constexpr int kIpMaxPacket = 65535;
// The largest UDP payload IP can carry (65535 less the IP and UDP headers):
// what a host whose path has no smaller MTU (loopback) sends unfragmented.
inline constexpr int kMaxUdpPayload = kIpMaxPacket - kUdpIpHdrLen;
// The largest Ethernet MTU simloop's interfaces take (jumbo frames), and
// so the largest payload the simulated host sends on every path.
inline constexpr int kMaxEtherMtu = 9216;
inline constexpr int kMaxJumboPayload = kMaxEtherMtu - kUdpIpHdrLen;

// Field offsets, from the start of each header.
namespace ether {
inline constexpr int kDst = 0, kSrc = 6, kType = 12;
}
namespace ip {
inline constexpr int kVhl = 0, kTos = 1, kLen = 2, kId = 4, kOff = 6, kTtl = 8, kProto = 9,
                     kSum = 10, kSrc = 12, kDst = 16;
}
namespace udp {
inline constexpr int kSport = 0, kDport = 2, kUlen = 4, kSum = 6;
}

constexpr uint32_t ip_addr(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  return (uint32_t{a} << 24) | (uint32_t{b} << 16) | (uint32_t{c} << 8) | uint32_t{d};
}

inline uint16_t load_be16(const uint8_t* p) {
  return static_cast<uint16_t>((uint16_t{p[0]} << 8) | p[1]);
}
inline uint32_t load_be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
inline void store_be16(uint8_t* p, uint16_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}
inline void store_be32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// One's-complement sum (RFC 1071) of `n` bytes, as machine-order 16-bit
// words, not yet folded. Byte-order independent as long as the result is
// folded and stored in machine order too.
uint64_t cksum_add(const uint8_t* p, int n, uint64_t sum = 0);

// Folds a sum to 16 bits.
inline uint16_t cksum_fold(uint64_t sum) {
  while ((sum >> 16) != 0) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// The checksum to store (with memcpy, in machine order) so that the covered
// bytes sum to 0xffff. A result of 0 means the bytes already verify.
inline uint16_t cksum_finish(uint64_t sum) {
  return static_cast<uint16_t>(~cksum_fold(sum));
}

// The UDP pseudo-header sum: source, destination, protocol, UDP length.
uint64_t cksum_pseudo(uint32_t src, uint32_t dst, uint8_t proto, uint16_t len);

}  // namespace simloop::net
