// The one way the stack is driven: the ttcp loop (ttcp.h) on a path, with
// the sender's buffer, ttcp's start and end sentinels, the warm-up, and what
// each send's outcome means. The simulator's sender (engine/simulation.cc),
// the layout advisor's recorded path (tools/advise/layout_advisor.cc), the
// native harness (tools/measure/native_loop.h) and calibration
// (tools/calibrate/calibrate.cc) all drive the stack through it, so a
// calibrated price is of the packets `measure native` times.
//
// A run: start() (the start sentinel, then the warm-up), send() for each
// packet that counts, finish() (the end sentinel, if no send stopped).
#pragma once

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <string>

#include "sim/stack/workload/path.h"
#include "sim/stack/workload/ttcp.h"

namespace simloop::workload {

inline constexpr int kSentinelLen = 4;  // ttcp's start/end marker datagrams

struct DriveOptions {
  Path path;
  int payload = 18;        // UDP payload bytes per datagram
  bool receive = true;     // Service::simulated: a receiver drains looped datagrams
  int64_t warmup = 0;      // untimed datagrams after the start sentinel
  bool sentinels = false;  // ttcp's start and end marker datagrams around the run
  bool connected = false;  // the sender connects once and sends with send() (TtcpOptions)
};

// What one send means for the run, in the order it is decided: a fault (a
// strict-alignment CPU's) ends the run whatever sendto() said; ENOBUFS is
// ttcp's to sleep on and retry (the simulator) or, after the loop's own
// retries (Service::drained), the end of the run; any other error ends it.
// blocked: no send space on a blocking socket (the Linux stack's
// send_blocked()): the sender waits for a transmit completion, as the
// kernel would sleep in the send, and tries again; ttcp never sees it.
enum class Outcome : uint8_t { sent, enobufs, blocked, fault, error };

struct Step {
  Sent sent;
  Outcome outcome = Outcome::sent;
  bool ok() const { return outcome == Outcome::sent; }
};

template <class P, net::UdpStack S = net::bsd::Stack<P>>
class Driver {
 public:
  using Loop = TtcpLoop<P, S>;
  using Stack = S;

  Driver(P& probe, const DriveOptions& opt, const typename S::Options& so)
      : opt_(opt),
        loop_(probe, {opt.path, opt.receive, opt.connected}, so),
        segments_(segments_of(so)),
        storage_(storage_bytes(opt, segments_)) {
    // UDP GSO: the sender's socket cuts each send into payload-sized
    // datagrams (setsockopt UDP_SEGMENT).
    if constexpr (requires(S & st) { st.set_udp_segment(0, 0); })
      if (segments_ > 1)
        if (const int err = loop_.stack().set_udp_segment(loop_.sender(), opt.payload); err != 0)
          throw std::invalid_argument("driver: UDP_SEGMENT " + std::to_string(opt.payload) +
                                      " refused: errno " + std::to_string(err));
    // The storage starts a page: the payload starts `buffer_misalign`
    // bytes past it, so past an 8-byte boundary.
    for (size_t i = 0; i + skip() < storage_.size(); ++i)
      buf()[i] = static_cast<uint8_t>(i * 7 + 1);
  }

  // The bytes of a send (the payload, or `segments` of them), for a caller
  // that fills them otherwise.
  std::span<uint8_t> payload() { return {buf(), send_len()}; }
  // Datagrams each send carries: the Linux stack's UDP_SEGMENT
  // (options.linux.udp_segment), else 1.
  int segments() const { return segments_; }

  // The start sentinel, then the warm-up (its errors ignored, as ttcp's
  // are; a fault stops it): "" or why the run cannot start.
  template <class H>
  std::string start(H& h) {
    if (opt_.sentinels)
      if (const int err = loop_.send(buf(), kSentinelLen, h).err; err != 0)
        return std::string("start sentinel failed: ") + std::strerror(err);
    for (int64_t i = 0; i < opt_.warmup && !loop_.stack().fault(); ++i)
      loop_.send(buf(), static_cast<int>(send_len()), h);
    return {};
  }
  std::string start() {
    NoHooks h;
    return start(h);
  }

  // One datagram of the run, and what it means.
  template <class H>
  Step send(H& h) {
    Step s{loop_.send(buf(), static_cast<int>(send_len()), h)};
    if (loop_.stack().fault())
      s.outcome = Outcome::fault;
    else if (s.sent.err == ENOBUFS)
      s.outcome = send_blocked() ? Outcome::blocked : Outcome::enobufs;
    else if (s.sent.err != 0)
      s.outcome = Outcome::error;
    stopped_ = stopped_ || (!s.ok() && s.outcome != Outcome::blocked);
    return s;
  }
  Step send() {
    NoHooks h;
    return send(h);
  }

  // What stopped a send: the fault, or sendto()'s error ("" if it was sent).
  std::string why(const Step& s) const {
    if (s.outcome == Outcome::fault) return loop_.stack().fault()->describe();
    if (s.sent.err != 0) return std::string("sendto failed: ") + std::strerror(s.sent.err);
    return {};
  }

  // The end sentinel, unless a send stopped the run.
  template <class H>
  void finish(H& h) {
    if (opt_.sentinels && !stopped_) loop_.send(buf(), kSentinelLen, h);
    loop_.end_call(h);
  }
  void finish() {
    NoHooks h;
    finish(h);
  }

  // Whether the next send would sleep for send space inside the call: the
  // simulator places that wait before it, so the call runs once.
  bool send_would_block() const { return loop_.send_would_block(); }

  Loop& loop() { return loop_; }
  S& stack() { return loop_.stack(); }
  const S& stack() const { return loop_.stack(); }
  const DriveOptions& options() const { return opt_; }

 private:
  bool send_blocked() const {
    if constexpr (requires(const S& st) { st.send_blocked(); })
      return loop_.stack().send_blocked();
    else
      return false;
  }
  template <class O>
  static int segments_of(const O& so) {
    if constexpr (requires { so.udp_segment; })
      return std::max(1, so.udp_segment);
    else
      return 1;
  }
  size_t send_len() const {
    return static_cast<size_t>(opt_.payload) * static_cast<size_t>(segments_);
  }
  static size_t storage_bytes(const DriveOptions& o, int segments) {
    if (o.path.buffer_misalign < 0 || o.path.buffer_misalign > Path::kMaxBufferMisalign)
      throw std::invalid_argument("driver: buffer_misalign must be 0..7");
    if (o.payload < 0) throw std::invalid_argument("driver: negative payload");
    return static_cast<size_t>(o.path.buffer_misalign) +
           std::max(static_cast<size_t>(o.payload) * static_cast<size_t>(segments),
                    static_cast<size_t>(kSentinelLen));
  }
  size_t skip() const { return static_cast<size_t>(opt_.path.buffer_misalign); }
  uint8_t* buf() { return storage_.data() + skip(); }

  DriveOptions opt_;
  Loop loop_;
  int segments_ = 1;
  PageBytes storage_;
  bool stopped_ = false;
};

}  // namespace simloop::workload
