// What the fuzz targets share: a check that turns a broken property into a
// crash libFuzzer reports (with the input that caused it), in every build
// type; assert() would vanish under NDEBUG.
#pragma once

#include <cstdio>
#include <cstdlib>

#define HVD_FUZZ_CHECK(cond)                                                   \
  do {                                                                         \
    if (!(cond)) {                                                             \
      std::fprintf(stderr, "%s:%d: property broken: %s\n", __FILE__, __LINE__, \
                   #cond);                                                     \
      std::abort();                                                            \
    }                                                                          \
  } while (0)
