// A sender that can never send again: sendto() failed with ENOBUFS time
// after time, with no datagram sent between the failures and nothing in
// flight whose completion could free a buffer. The stack then fails every
// allocation (a leak, or pools too small for one datagram), and ttcp's
// retries would go on for ever: the run stops instead.
#pragma once

#include <cstdint>

namespace simloop::engine {

class HopelessSends {
 public:
  static constexpr int kLimit = 100;  // failures in a row that end a run

  // One failed send, after `sent` datagrams; `idle`: nothing in flight.
  // True once the run should stop.
  bool failed(int64_t sent, bool idle) {
    count_ = !idle ? 0 : sent == sent_at_ ? count_ + 1 : 1;
    sent_at_ = sent;
    return count_ >= kLimit;
  }
  int count() const { return count_; }

 private:
  int count_ = 0;
  int64_t sent_at_ = -1;
};

}  // namespace simloop::engine
