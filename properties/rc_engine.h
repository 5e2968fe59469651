// cutcheck's one door into RapidCheck's engine. The public API runs a property as a test
// that prints to stdout; running one quietly with a given seed, case count and replay,
// and reading its outcome as a value, takes rc::detail, which only rc_engine.cpp uses.
// Property bodies still draw with *gen and fail with RC_ASSERT / RC_FAIL (public API).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace cutcheck {

struct ReproduceEntry {
  std::string property;
  int size;
};

// Decodes a reproduce string (RapidCheck's configuration text) and checks each entry's
// size against [0, max_size]; throws Error / InputError naming what is wrong.
std::vector<ReproduceEntry> read_reproduce(const std::string& text, int max_size);

struct RcRun {
  std::string name;         // the property's name; a reproduce string replays its entry for it
  std::string description;
  int cases = 100;          // cases to pass
  uint64_t seed = 0;        // the same seed draws the same cases
  bool shrink = true;
  std::string reproduce = {};  // "" or a reproduce string of an earlier failure
};

struct RcOutcome {
  enum class Kind { passed, failed, gave_up, error } kind = Kind::error;
  int cases = 0;               // cases that passed
  std::string message;         // what failed (RapidCheck's location prefix removed), or why it gave up
  std::string counterexample;  // the shrunk case, printed, one value a line
  std::string reproduce;       // the reproduce string that replays the failure
};

// Runs `body` as a RapidCheck property, printing nothing.
RcOutcome run_property(const RcRun& run, const std::function<void()>& body);

}  // namespace cutcheck
