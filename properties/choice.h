// Choices that shrink. RapidCheck's gen::element, gen::elementOf and gen::oneOf never
// shrink what they pick, so a failing case drawn with a wide head or a long cache would
// stay that wide. These pick by an index that shrinks toward 0: list the simplest
// choice first.
#pragma once

#include <rapidcheck.h>

#include <memory>
#include <vector>

namespace cutcheck {

template <typename T>
rc::Gen<T> choice(std::vector<T> options) {
  auto shared = std::make_shared<const std::vector<T>>(std::move(options));
  return rc::gen::map(rc::gen::inRange<size_t>(0, shared->size()), [shared](size_t i) { return (*shared)[i]; });
}

template <typename T, typename... Ts>
rc::Gen<T> choice_of(T first, Ts... rest) {
  return choice(std::vector<T>{first, T(rest)...});
}

// One of the generators, shrinking toward the first, then within it.
template <typename T>
rc::Gen<T> either(rc::Gen<T> first, rc::Gen<T> second) {
  return rc::gen::mapcat(rc::gen::inRange(0, 2), [first, second](int i) { return i == 0 ? first : second; });
}

}  // namespace cutcheck
