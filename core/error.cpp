#include "core/error.h"

#include <fmt/format.h>

namespace cutcheck {

ParseError::ParseError(const std::string& file, int line, int column, const std::string& what)
    : Error(fmt::format("{}:{}:{}: {}", file, line, column, what)), line_(line), column_(column) {}

int exit_code_of(const std::exception& e) {
  if (dynamic_cast<const NotYet*>(&e)) return 77;
  if (dynamic_cast<const Error*>(&e)) return 2;
  return 70;
}

}  // namespace cutcheck
