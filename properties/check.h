// Runs catalog properties with RapidCheck and reports each as a value: cases, result,
// time, and on failure the shrunk counterexample and the string that reproduces it.
#pragma once

#include <cassert>  // rapidcheck's detail headers use assert without including it
#include <rapidcheck/detail/Results.h>

#include <cstdint>
#include <unordered_map>
#include <string>
#include <vector>

#include "properties/catalog.h"

namespace cutcheck {

// Decodes a reproduce string (RapidCheck's configuration text) and checks each entry's
// size against [0, max_size]; throws Error / InputError naming what is wrong.
std::unordered_map<std::string, rc::detail::Reproduce> read_reproduce(const std::string& text, int max_size);

struct CheckOptions {
  int cases = 100;
  uint64_t seed = 0;       // RapidCheck's seed; the same seed generates the same cases
  bool shrink = true;
  std::string reproduce = {};  // RapidCheck's "reproduce=..." string of an earlier failure
};

struct CheckResult {
  std::string property;
  int cases = 0;           // cases that passed
  bool passed = false;
  double seconds = 0;
  std::string failure;         // what failed, after shrinking
  std::string counterexample;  // the shrunk case, printed
  std::string reproduce;       // RC_PARAMS value that replays this failure
};

CheckResult check(const Property& property, const Subject& subject, const CheckOptions& options);

}  // namespace cutcheck
