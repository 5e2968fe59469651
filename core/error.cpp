#include "core/error.h"

#include <fmt/format.h>

namespace cutcheck {

ParseError::ParseError(const std::string& file, int line, int column, const std::string& what)
    : Error(fmt::format("{}:{}:{}: {}", file, line, column, what)), line_(line), column_(column) {}

}  // namespace cutcheck
