#include "properties/rc_engine.h"

#include <rapidcheck.h>
#include <rapidcheck/detail/Configuration.h>
#include <rapidcheck/detail/TestListener.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string_view>
#include <unordered_map>

#include "core/error.h"

namespace cutcheck {
namespace {

using Replay = std::unordered_map<std::string, rc::detail::Reproduce>;

class Silent : public rc::detail::TestListener {
 public:
  void onTestCaseFinished(const rc::detail::CaseDescription&) override {}
  void onShrinkTried(const rc::detail::CaseDescription&, bool) override {}
  void onTestFinished(const rc::detail::TestMetadata&, const rc::detail::TestResult&) override {}
};

// RapidCheck's text for bytes: 6 bits per character from this alphabet, packed least
// significant bits first, four characters to three bytes.
constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+_";

std::vector<uint8_t> decode_bytes(std::string_view text) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t bits = 0;
    int count = 0;
    for (size_t j = i; j < std::min(text.size(), i + 4); ++j, count += 6) bits |= uint32_t(alphabet.find(text[j])) << count;
    for (; count >= 8; count -= 8, bits >>= 8) out.push_back(uint8_t(bits));
  }
  return out;
}

// Walks RapidCheck's serialized replay map with every bound checked. RapidCheck's own
// reader trusts its input (found by fuzz_replay): it reserves a name's declared length
// before reading it (terabytes, from a crafted length), shifts past 64 bits on an overlong
// number, and reads a generator's last byte past the end of the data. So a reproduce
// string reaches RapidCheck only once this walk has found it whole.
class ReplayBytes {
 public:
  explicit ReplayBytes(std::vector<uint8_t> data) : data_(std::move(data)) {}

  // The map: a count, then per property its name and its replay state.
  void check() {
    for (uint64_t n = number("the property count"); n > 0; --n) {
      const uint64_t length = number("a property name's length");
      if (length > left())
        throw InputError(fmt::format("the reproduce string: a property name of {} bytes, in {} bytes of data", length,
                                     data_.size()));
      skip(length, "a property name");
      skip(4 * 8, "the generator's key");  // rc::Random: four 64-bit words,
      number("the generator's bits");      // its bits and counter,
      number("the generator's counter");
      skip(1, "the generator's bit index");
      if (data_[at_ - 1] > 64)  // and how many bits are used: 64 at most
        throw InputError(fmt::format("the reproduce string: a bit index of {}, above 64", data_[at_ - 1]));
      skip(4, "the size");  // a 32-bit size (its range is checked once decoded)
      const uint64_t steps = number("the shrink path's length");
      if (steps > left()) throw InputError("the reproduce string: a shrink path longer than its data");
      for (uint64_t i = 0; i < steps; ++i) number("a shrink step");
    }
  }

 private:
  uint64_t left() const { return data_.size() - at_; }

  void skip(uint64_t bytes, const char* what) {
    if (bytes > left()) throw InputError(fmt::format("the reproduce string ends within {}", what));
    at_ += size_t(bytes);
  }

  // 7 bits a byte, least significant first, the high bit set on all but the last; at most
  // 64 bits.
  uint64_t number(const char* what) {
    uint64_t value = 0;
    for (int shift = 0;; shift += 7) {
      if (at_ == data_.size()) throw InputError(fmt::format("the reproduce string ends within {}", what));
      const uint8_t b = data_[at_++];
      if (shift > 63 || (shift == 63 && (b & 0x7f) > 1))
        throw InputError(fmt::format("the reproduce string: {} does not fit in 64 bits", what));
      value |= uint64_t(b & 0x7f) << shift;
      if (!(b & 0x80)) return value;
    }
  }

  std::vector<uint8_t> data_;
  size_t at_ = 0;
};

// The reproduce string cutcheck prints is `reproduce=` and RapidCheck's encoding. Every
// mention of `reproduce` must be that, and its data whole, before RapidCheck reads it.
void check_replay_data(const std::string& text) {
  for (size_t at = text.find("reproduce"); at != std::string::npos; at = text.find("reproduce", at + 1)) {
    const size_t start = at + std::string_view("reproduce").size();
    size_t end = start + 1;
    if (start < text.size() && text[start] == '=')
      while (end < text.size() && alphabet.find(text[end]) != std::string_view::npos) ++end;
    if (start >= text.size() || text[start] != '=' || (end < text.size() && text[end] != ' '))
      throw InputError("the reproduce string: 'reproduce' must be followed by '=' and RapidCheck's encoding (letters, "
                       "digits, '+' and '_'), as cutcheck prints it");
    ReplayBytes(decode_bytes(std::string_view(text).substr(start + 1, end - start - 1))).check();
  }
}

Replay decode(const std::string& text, int max_size) {
  check_replay_data(text);
  Replay replay;
  try {
    replay = rc::detail::configFromString(text).reproduce;
  } catch (const std::exception& e) {
    throw Error(std::string("cannot read the reproduce string: ") + e.what());
  }
  // The string is input: a size outside what generation ever uses would build specs and
  // cuts no run could hold (or negative widths), so it is refused here, by name.
  for (const auto& [name, r] : replay)
    if (r.size < 0 || r.size > max_size)
      throw InputError(fmt::format("the reproduce string: property '{}': size {} is outside [0, {}]", name, r.size,
                                   max_size));
  return replay;
}

}  // namespace

std::vector<ReproduceEntry> read_reproduce(const std::string& text, int max_size) {
  std::vector<ReproduceEntry> out;
  for (const auto& [name, r] : decode(text, max_size)) out.push_back({name, r.size});
  return out;
}

RcOutcome run_property(const RcRun& run, const std::function<void()>& body) {
  rc::detail::TestMetadata metadata{run.name, run.description};
  rc::detail::TestParams params;
  params.maxSuccess = run.cases;
  params.seed = run.seed;
  params.disableShrinking = !run.shrink;
  const Replay replay = run.reproduce.empty() ? Replay{} : decode(run.reproduce, params.maxSize);
  Silent listener;
  auto result = rc::detail::checkProperty(rc::detail::toProperty(body), metadata, params, listener, replay);
  RcOutcome out;
  if (result.is<rc::detail::SuccessResult>()) {
    out.kind = RcOutcome::Kind::passed;
    out.cases = result.get<rc::detail::SuccessResult>().numSuccess;
  } else if (result.is<rc::detail::FailureResult>()) {
    const auto& failure = result.get<rc::detail::FailureResult>();
    out.kind = RcOutcome::Kind::failed;
    out.cases = failure.numSuccess;
    // RapidCheck prefixes "file:line:\nRC_FAIL(...)\n\n"; keep the message itself.
    out.message = failure.description;
    if (size_t at = out.message.rfind("\n\n"); at != std::string::npos) out.message = out.message.substr(at + 2);
    std::ostringstream example;
    for (const auto& [type, value] : failure.counterExample) example << value << "\n";
    out.counterexample = example.str();
    rc::detail::Configuration config;
    config.reproduce[run.name] = failure.reproduce;
    out.reproduce = rc::detail::configToMinimalString(config);
  } else if (result.is<rc::detail::GaveUpResult>()) {
    out.kind = RcOutcome::Kind::gave_up;
    out.cases = result.get<rc::detail::GaveUpResult>().numSuccess;
    out.message = result.get<rc::detail::GaveUpResult>().description;
  } else {
    out.message = result.get<rc::detail::Error>().description;
  }
  return out;
}

}  // namespace cutcheck
