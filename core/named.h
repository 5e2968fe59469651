// Looking up catalogue entries (faults, properties) by name, with an error that lists
// the names there are.
#pragma once

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace cutcheck {

template <class Item>
const Item& find_named(const std::vector<Item>& items, const std::string& name, const char* what) {
  std::vector<std::string> names;
  for (const Item& item : items) {
    if (item.name == name) return item;
    names.push_back(item.name);
  }
  throw Error(fmt::format("no {} named '{}' (known: {})", what, name, fmt::join(names, ", ")));
}

}  // namespace cutcheck
