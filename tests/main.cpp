// The test binary's main: GoogleTest's, except that it refuses GoogleTest's sharding when
// run as one test of a ctest suite. gtest_discover_tests makes every test a ctest test of
// its own (--gtest_filter=Suite.Name); GTEST_TOTAL_SHARDS then shards that one-test run,
// so one shard runs it and every other shard runs nothing and passes: a false green.
// Shard the suite with `ctest -I START,,STRIDE` instead (docs/development.md, "Sharding the test suite").
// When every test passed, the folders the tests made (test::temp_dir) are removed.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "tests/helpers.h"

namespace {

// --gtest_filter naming exactly one test (no pattern, no list): how ctest runs each test.
bool runs_one_test(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--gtest_filter=", 0) != 0) continue;
    const std::string filter = arg.substr(std::strlen("--gtest_filter="));
    return filter.find_first_of("*?:-") == std::string::npos && !filter.empty();
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  const char* shards = std::getenv("GTEST_TOTAL_SHARDS");
  if (shards && *shards && std::string(shards) != "1" && runs_one_test(argc, argv)) {
    std::fprintf(stderr,
                 "GTEST_TOTAL_SHARDS=%s is set, but ctest runs each test in a process of its own, where GoogleTest's "
                 "sharding would run it in one shard and nothing in the others (which would pass). Shard the suite "
                 "with ctest -I START,,STRIDE (for shard k of n: ctest -I k,,n), and unset GTEST_TOTAL_SHARDS and "
                 "GTEST_SHARD_INDEX.\n",
                 shards);
    return 2;
  }
  ::testing::InitGoogleTest(&argc, argv);
  const int failed = RUN_ALL_TESTS();
  if (failed == 0) cutcheck::test::remove_temp_dirs();
  return failed;
}
