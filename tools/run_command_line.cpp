#include "tools/run_command_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/interrupt.h"
#include "core/limits.h"
#include "tools/commands.h"

namespace cutcheck::cli {
namespace {

// Edits (insertions, deletions, substitutions) between two words.
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

// A first argument that is no command, for an app made of commands: the message names it,
// the closest command when one is near, and the list (CLI11 alone says only "A subcommand
// is required").
std::optional<std::string> unknown_command(const CLI::App& app, int argc, char** argv) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  if (names.empty() || argc < 2 || argv[1][0] == '-') return std::nullopt;
  const std::string given = argv[1];
  if (std::find(names.begin(), names.end(), given) != names.end()) return std::nullopt;
  std::string message = fmt::format("unknown command '{}'", given);
  auto closest = std::min_element(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return edit_distance(given, a) < edit_distance(given, b);
  });
  if (closest != names.end() && edit_distance(given, *closest) <= std::max<size_t>(2, given.size() / 3))
    message += fmt::format("; did you mean '{}'?", *closest);
  return message + fmt::format(" (commands: {})", fmt::join(names, ", "));
}

}  // namespace

int run_command_line(CLI::App& app, int argc, char** argv) {
  try {
    // A malformed CUTCHECK_MEMORY_LIMIT is refused before any command starts, not at the
    // first allocation in the middle of one.
    memory_limit();
    if (auto unknown = unknown_command(app, argc, argv)) {
      fmt::print(stderr, "cutcheck: {}\n", *unknown);
      return 2;
    }
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version print and succeed; every usage error is exit 2, whatever code
    // CLI11 gives it (docs/exit-codes.md).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const Interrupted& e) {  // SIGINT, SIGTERM: the clean-up is done by now
    fmt::print(stderr, "cutcheck: stopped by signal {} ({})\n", e.signal, strsignal(e.signal));
    return 128 + e.signal;
  } catch (const CheckFailed& e) {
    fmt::print(stderr, "cutcheck: {}\n", e.what());
    return 1;
  } catch (const std::exception& e) {  // not supported (77), the user's error (2), a bug (70)
    const int code = exit_code_of(e);
    fmt::print(stderr, "cutcheck: {}: {}\n", code == 77 ? "not supported" : code == 2 ? "error" : "internal error",
               e.what());
    return code;
  }
  return 0;
}

}  // namespace cutcheck::cli
