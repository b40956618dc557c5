// The ttcp workload: a sender that sends one datagram per loop iteration on
// a path (path.h), and the receiver that drains what loops back. One copy of
// it serves the simulator's sender, the layout advisor's recorded path, the
// native harness and calibration, each through the driver (driver.h).
//
// The loop runs the real stack; what a caller adds around it (cycles, a
// trace of the code that runs, clock reads) comes through hooks at the
// sender's loop, the system call and the receiver's recvfrom(); the ring
// hand-off comes back in the result (Sent::frame).
#pragma once

#include <cerrno>
#include <climits>
#include <cstddef>
#include <cstdint>
#include <new>
#include <string>
#include <vector>

#include "sim/stack/bsd/stack.h"
#include "sim/stack/workload/path.h"

namespace simloop::workload {

// Bytes that start a page of their own: which pages an access to them
// touches never depends on where the heap put them (the data TLB model sees
// pages; the stack's own buffers are in mapped zones).
template <class T>
struct PageAligned {
  using value_type = T;
  static constexpr std::align_val_t kAlign{4096};
  PageAligned() = default;
  template <class U>
  PageAligned(const PageAligned<U>& /*other*/) {}
  T* allocate(size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), kAlign)); }
  void deallocate(T* p, size_t /*n*/) { ::operator delete(p, kAlign); }
  friend bool operator==(const PageAligned&, const PageAligned&) { return true; }
};
using PageBytes = std::vector<uint8_t, PageAligned<uint8_t>>;

// What a caller adds around the real stack. Every hook is optional: derive
// from NoHooks and hide the ones you need.
struct NoHooks {
  void user_loop() {}      // the sender's loop, before each sendto()
  void syscall_enter() {}  // sendto()'s system call entry
  void syscall_exit() {}   // ... and exit
  void next_message() {}   // sendmmsg()'s next message, in the same system call
  void call_slept() {}     // the sender slept inside an open sendmmsg() call
  void receive_enter() {}  // the receiver's recvfrom() system call entry
  void receive_exit() {}   // ... and exit
  void retry() {}          // sendto() said ENOBUFS and is tried again (Service::drained)
};

struct TtcpOptions {
  Path path;
  bool receive = true;  // Service::simulated: a receiver drains looped datagrams
  // The sender connects its socket once and sends with send() (a stack
  // with connect(): Linux keeps the route); otherwise sendto() each time.
  bool connected = false;
};

// One sendto() and what followed it.
//
// The ring hand-off is part of the result, not a hook: a caller can only
// act on it once the whole send is over. The simulator puts the frame on
// the wire after the packet's cycles, the netisr's and the receiver's
// included, and only if no fault, ENOBUFS or error ended the send; a hook
// called where the driver queues the frame comes before all of those, so
// the caller would have to keep it aside and decide later, which is what
// this flag already says.
struct Sent {
  int err = 0;         // sendto()'s result (after retries with Service::drained)
  bool frame = false;  // it left a frame on the NIC ring (the ring hand-off)
};

// The loop over a stack `S` (net/stack_concept.h; the BSD mbuf stack by
// default) that reports to a probe of type P.
template <class P, net::UdpStack S = net::bsd::Stack<P>>
class TtcpLoop {
 public:
  using Stack = S;

  TtcpLoop(P& probe, const TtcpOptions& opt, const typename S::Options& so)
      : opt_(opt), stack_(probe, stack_options_for(opt.path, so)) {
    rx_ = stack_.socket();
    tx_ = stack_.socket();
    stack_.bind(rx_, 0, kTtcpPort);
    if (opt.connected) {
      if constexpr (requires { stack_.connect(tx_, uint32_t{}, uint16_t{}); }) {
        if (const int err = stack_.connect(tx_, dest_addr(opt.path.dest), kTtcpPort); err != 0)
          throw PathError("the sender's connect() failed: errno " + std::to_string(err));
      } else {
        throw PathError("the " + std::string(S::fn_table().stack()) +
                        " stack's sender cannot connect: it sends with sendto() only");
      }
    }
  }

  // One datagram of `len` bytes from `data`.
  template <class H>
  Sent send(const void* data, int len, H& h) {
    return opt_.path.service == Service::simulated ? send_simulated(data, len, h)
                                                   : send_drained(data, len, h);
  }
  Sent send(const void* data, int len) {
    NoHooks h;
    return send(data, len, h);
  }

  // The driver's txeof: reclaims up to `max` finished frames of the ring.
  int reap(int max = INT_MAX) { return stack_.nic_txeof(max); }

  S& stack() { return stack_; }
  const S& stack() const { return stack_; }
  const TtcpOptions& options() const { return opt_; }
  int receiver() const { return rx_; }  // the receiver's socket
  int sender() const { return tx_; }    // the sender's socket
  // Whether the next send would sleep for send space inside the call (a
  // stack whose sockets block so: the Linux stack's sock_alloc_send_pskb).
  bool send_would_block() const {
    if constexpr (requires { stack_.send_would_block(tx_); })
      return stack_.send_would_block(tx_);
    else
      return false;
  }
  // The bytes the sender's socket holds against its send buffer (a stack
  // whose sends wait for send space; 0 on others).
  int send_queued() const {
    if constexpr (requires { stack_.snd_queued(tx_); })
      return stack_.snd_queued(tx_);
    else
      return 0;
  }

 private:
  int sendto(const void* data, int len) {
    if constexpr (requires { stack_.send(tx_, data, len); })
      if (opt_.connected) return stack_.send(tx_, data, len);
    return stack_.sendto(tx_, data, len, dest_addr(opt_.path.dest), kTtcpPort);
  }
  template <class H>
  int syscall(const void* data, int len, H& h) {
    if constexpr (requires { stack_.sendmmsg_msg(tx_, data, len, uint32_t{}, uint16_t{}, true); })
      if (const int batch = stack_.options().sendmmsg; batch > 1)
        return batched(data, len, batch, h);
    h.user_loop();
    h.syscall_enter();
    const int err = sendto(data, len);
    h.syscall_exit();
    return err;
  }
  // One message of a sendmmsg() call of `batch`: the call's entry with its
  // first message, its exit after its last, or after a message that failed
  // (sendmmsg returns what it sent so far; the next message is a new call).
  // The exit waits for the message's softirq and reads on loopback
  // (close_ended_call), which run inside the call on the kernel.
  // The user's loop runs once a call: perf puts two thirds of its time in
  // the sendto() wrapper and the loop around it (experiments/validation/
  // linux/knobs.md), and the machine profile has one price for it.
  template <class H>
  int batched(const void* data, int len, int batch, H& h) {
    const bool first = in_call_ == 0;
    if (first) {
      h.user_loop();
      h.syscall_enter();
    } else if (slept_) {
      slept_ = false;  // the thread slept in the call: this message runs cold
    } else {
      h.next_message();
    }
    const int err = opt_.connected ? stack_.sendmmsg_msg(tx_, data, len, 0, 0, first)
                                   : stack_.sendmmsg_msg(tx_, data, len, dest_addr(opt_.path.dest),
                                                         kTtcpPort, first);
    if (++in_call_ == batch || err != 0) ending_ = true;
    return err;
  }
  template <class H>
  void close_ended_call(H& h) {
    if (ending_) end_call(h);
  }

 public:
  // Ends a sendmmsg() call whose batch the run did not fill.
  template <class H>
  void end_call(H& h) {
    ending_ = slept_ = false;
    if (in_call_ == 0) return;
    in_call_ = 0;
    h.syscall_exit();
  }
  // The sender slept inside an open sendmmsg() call (a blocked send waits
  // for send space): what runs until its next message, and that message,
  // are not warm from the message before.
  template <class H>
  void slept(H& h) {
    if (in_call_ == 0) return;
    slept_ = true;
    h.call_slept();
  }

 private:
  template <class H>
  int receive_one(H& h) {
    int got = 0;
    h.receive_enter();
    const int err = stack_.recvfrom(rx_, rbuf_.data(), static_cast<int>(rbuf_.size()), &got);
    h.receive_exit();
    return err;
  }

  template <class H>
  Sent send_simulated(const void* data, int len, H& h) {
    const int ring_before = stack_.nic_pending();
    Sent s;
    s.err = syscall(data, len, h);
    if (loops_back(opt_.path.dest)) {
      stack_.netisr_run(INT_MAX);
      while (opt_.receive && stack_.rcv_queued(rx_) > 0) receive_one(h);
    }
    close_ended_call(h);
    s.frame = stack_.nic_pending() > ring_before;
    return s;
  }

  template <class H>
  void service(H& h) {
    if (opt_.path.service == Service::drained) {
      stack_.netisr_run(INT_MAX);
      while (receive_one(h) == 0) {
      }
    }
    stack_.nic_txeof(INT_MAX);
  }
  template <class H>
  Sent send_drained(const void* data, int len, H& h) {
    int ring_before = stack_.nic_pending();
    Sent s;
    // The harness serves each datagram after its call has returned.
    s.err = syscall(data, len, h);
    close_ended_call(h);
    for (int tries = 0; s.err == ENOBUFS && tries < 1000; ++tries) {
      h.retry();
      service(h);
      ring_before = stack_.nic_pending();
      s.err = syscall(data, len, h);
      close_ended_call(h);
    }
    s.frame = stack_.nic_pending() > ring_before;
    service(h);
    return s;
  }

  TtcpOptions opt_;
  S stack_;
  int rx_ = -1, tx_ = -1;
  int in_call_ = 0;      // messages of the open sendmmsg() call so far
  bool ending_ = false;  // the open call returns once its last message is served
  bool slept_ = false;   // the sender slept in the open call since its last message
  PageBytes rbuf_ = PageBytes(65536);
};

}  // namespace simloop::workload
