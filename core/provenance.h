// What reports say of when and where they ran.
#pragma once

#include <string>

namespace cutcheck {

std::string utc_now();    // "2026-12-01T10:00:00Z": now, in UTC (ISO 8601)
std::string host_name();  // the machine's host name; empty when it has none

}  // namespace cutcheck
