// The count of global operator new calls in a test program that links
// tests/counting_new.cc, which replaces every form of operator new (and
// delete) with one that counts. A test that claims a path allocates nothing
// reads it before and after.
#pragma once

#include <atomic>
#include <cstdint>

extern std::atomic<uint64_t> g_news;
