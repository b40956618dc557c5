// The mbuf layer under sequences of operations that the input chooses: the
// property test's model (tests/mbuf_model.h), with every decision read from
// the input, and its invariants checked after every step. A broken
// invariant aborts, naming the check.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>

namespace {

// What gtest's assertions do in the test, done here by aborting.
class Failure {
 public:
  Failure(const char* file, int line, const char* what) {
    os_ << file << ":" << line << ": check failed: " << what << " ";
  }
  Failure(const Failure&) = delete;
  Failure& operator=(const Failure&) = delete;
  ~Failure() {
    std::fprintf(stderr, "%s\n", os_.str().c_str());
    std::abort();
  }
  template <class T>
  Failure& operator<<(const T& v) {
    os_ << v;
    return *this;
  }

 private:
  std::ostringstream os_;
};

}  // namespace

#define SIMLOOP_FUZZ_CHECK(cond, text) \
  if (cond) {                          \
  } else                               \
    Failure(__FILE__, __LINE__, text)
#define EXPECT_TRUE(c) SIMLOOP_FUZZ_CHECK((c), #c)
#define EXPECT_FALSE(c) SIMLOOP_FUZZ_CHECK(!(c), "!(" #c ")")
#define EXPECT_EQ(a, b) SIMLOOP_FUZZ_CHECK((a) == (b), #a " == " #b)
#define EXPECT_NE(a, b) SIMLOOP_FUZZ_CHECK((a) != (b), #a " != " #b)
#define EXPECT_LT(a, b) SIMLOOP_FUZZ_CHECK((a) < (b), #a " < " #b)
#define EXPECT_LE(a, b) SIMLOOP_FUZZ_CHECK((a) <= (b), #a " <= " #b)
#define EXPECT_GT(a, b) SIMLOOP_FUZZ_CHECK((a) > (b), #a " > " #b)
#define EXPECT_GE(a, b) SIMLOOP_FUZZ_CHECK((a) >= (b), #a " >= " #b)
#define ASSERT_TRUE EXPECT_TRUE
#define ASSERT_FALSE EXPECT_FALSE
#define ASSERT_EQ EXPECT_EQ
#define ASSERT_NE EXPECT_NE
#define ASSERT_LT EXPECT_LT
#define ASSERT_LE EXPECT_LE
#define ASSERT_GT EXPECT_GT
#define ASSERT_GE EXPECT_GE
#define ADD_FAILURE() Failure(__FILE__, __LINE__, "failure")

#include "mbuf_model.h"

namespace {

// Every decision of the model: two bytes of the input each, then zeros.
struct InputChoices {
  const uint8_t* data;
  size_t size, at = 0;
  bool done() const { return at >= size; }
  uint64_t operator()() {
    uint64_t v = 0;
    for (int i = 0; i < 2; ++i) v = v << 8 | (at < size ? data[at++] : 0);
    return v;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace simloop::net::bsd::model;
  InputChoices choose{data, size};
  std::mt19937_64 fill(size);  // the bytes written matter less than where
  MbufModel<InputChoices, std::mt19937_64> model(choose, fill);
  for (int step = 0; !choose.done() && step < 400; ++step) {
    model.Step(step);
    model.Apply(model.Draw());
    model.CheckAll();
  }
  model.FreeAll();
  return 0;
}
