// The default memory limit is the machine's: its available memory, or its cgroup's limit
// where that is lower (read from files a test fakes, so no test needs the memory itself);
// and a run's estimate, against the peak a real run was measured at.
#include <gmock/gmock.h>

#include "core/files.h"
#include "core/limits.h"
#include "model/cut.h"
#include "model/footprint.h"
#include "model/spec.h"
#include "tests/helpers.h"

namespace cutcheck {
namespace {

constexpr uint64_t GiB = uint64_t{1} << 30;

// A machine of the files Linux keeps: MemAvailable, the process's cgroups, their limits.
class FakeMachine {
 public:
  explicit FakeMachine(const std::string& name) : dir_(test::temp_dir("machine-" + name)) {
    files_ = {dir_ / "meminfo", dir_ / "cgroup", dir_ / "sys"};
  }
  FakeMachine& available(uint64_t bytes) {
    write(files_.meminfo, "MemTotal:       25165824 kB\nMemFree:        1048576 kB\nMemAvailable:   " +
                              std::to_string(bytes >> 10) + " kB\nBuffers:          1024 kB\n");
    return *this;
  }
  FakeMachine& cgroups(const std::string& text) {
    write(files_.cgroups, text);
    return *this;
  }
  // `value` in the file `name` of the cgroup folder `path` (under the fake root).
  FakeMachine& limit(const std::string& path, const std::string& name, const std::string& value) {
    write(files_.cgroup_root / path / name, value + "\n");
    return *this;
  }
  uint64_t default_limit() const { return machine_memory_limit(files_); }

 private:
  static void write(const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    write_file_atomic(file, text);
  }
  fs::path dir_;
  MemoryFiles files_;
};

TEST(MemoryLimit, IsTheAvailableMemoryWithoutACgroupLimit) {
  EXPECT_EQ(FakeMachine("plain").available(22 * GiB).default_limit(), 22 * GiB);
  // Cgroups without a limit: v2's "max", v1's largest page-aligned value.
  EXPECT_EQ(FakeMachine("v2-max").available(22 * GiB).cgroups("0::/user.slice/session-1.scope\n")
                .limit("user.slice/session-1.scope", "memory.max", "max").limit("user.slice", "memory.max", "max")
                .default_limit(),
            22 * GiB);
  EXPECT_EQ(FakeMachine("v1-unlimited").available(22 * GiB).cgroups("9:name=systemd:/\n4:memory:/job/7\n0::/\n")
                .limit("memory/job/7", "memory.limit_in_bytes", "9223372036854771712").default_limit(),
            22 * GiB);
}

TEST(MemoryLimit, IsTheCgroupsLimitWhereThatIsLower) {
  // v2: the process's own cgroup, or one above it (a limit holds for everything below).
  EXPECT_EQ(FakeMachine("v2-own").available(22 * GiB).cgroups("0::/ci/job\n")
                .limit("ci/job", "memory.max", std::to_string(8 * GiB)).default_limit(),
            8 * GiB);
  EXPECT_EQ(FakeMachine("v2-parent").available(22 * GiB).cgroups("0::/ci/job\n")
                .limit("ci/job", "memory.max", "max").limit("ci", "memory.max", std::to_string(6 * GiB)).default_limit(),
            6 * GiB);
  // v1 (a hybrid layout: memory under v1, the rest under v2), the controller among others.
  EXPECT_EQ(FakeMachine("v1").available(22 * GiB).cgroups("4:cpu,memory:/process_api/5c5c\n0::/\n")
                .limit("memory/process_api/5c5c", "memory.limit_in_bytes", std::to_string(3 * GiB)).default_limit(),
            3 * GiB);
  // A container's view: its cgroup is the root of what it sees, and its path leads nowhere.
  EXPECT_EQ(FakeMachine("container").available(22 * GiB).cgroups("4:memory:/docker/0123abcd\n")
                .limit("memory", "memory.limit_in_bytes", std::to_string(2 * GiB)).default_limit(),
            2 * GiB);
  // A limit above the available memory leaves the available memory.
  EXPECT_EQ(FakeMachine("roomy").available(5 * GiB).cgroups("0::/ci\n")
                .limit("ci", "memory.max", std::to_string(64 * GiB)).default_limit(),
            5 * GiB);
}

TEST(MemoryLimit, Is16GiBWhereNothingCanBeRead) {
  EXPECT_EQ(FakeMachine("nothing").default_limit(), 16 * GiB);
  EXPECT_EQ(FakeMachine("garbage").cgroups("garbage\n0::\n4:memory\n").limit("", "memory.max", "lots").default_limit(),
            16 * GiB);
  // Without meminfo, a cgroup's limit still counts.
  EXPECT_EQ(FakeMachine("cgroup-only").cgroups("0::/\n").limit("", "memory.max", std::to_string(4 * GiB)).default_limit(),
            4 * GiB);
}

// `cutcheck run` of llama3-8b's decode{ctx=4096} on its seeded bf16 weights (a 14.96 GiB
// file, 1 GiB of caches), measured with /usr/bin/time -v on the 2-core, 24 GiB development
// machine: a peak resident set of 17,350,220 KiB, of which the mapped weights file was
// 14.99 GiB (all of it read) and the rest the caches (docs/checkpoints.md). The estimate
// is near it, and such a machine (22 GiB available) runs it without a CUTCHECK_MEMORY_LIMIT.
TEST(MemoryLimit, Llama3_8bDecodeIsEstimatedNearItsMeasuredPeakAndFitsA24GiBMachine) {
  const ModelSpec spec = builtin_spec("llama3-8b");
  const Cut cut = Cut::decode(4096);
  const double peak = 17350220.0 * 1024, estimate = run_bytes(spec, cut);
  EXPECT_GE(estimate, peak * 0.95) << "an estimate below what the run holds";
  EXPECT_LE(estimate, peak * 1.1) << "estimated " << human_bytes(estimate) << " against a peak of " << human_bytes(peak);
  test::ScopedMemoryLimit machine(FakeMachine("24GiB").available(22 * GiB).default_limit());
  EXPECT_NO_THROW(check_run_fits(spec, cut, "llama3-8b"));
}

}  // namespace
}  // namespace cutcheck
