#include <fmt/format.h>

#include "model/spec.h"
#include "tools/commands.h"

namespace cutcheck::cli {

void add_spec(CLI::App& app) {
  auto name = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("spec", "print a built-in spec as JSON (or list them)");
  cmd->add_option("name", *name, "a built-in spec name; omit to list them");
  cmd->callback([name] {
    if (name->empty()) {
      for (const std::string& n : builtin_spec_names()) fmt::print("{}\n", builtin_spec(n).summary());
      return;
    }
    fmt::print("{}\n", load_spec(*name).to_json().dump(2));
  });
}

}  // namespace cutcheck::cli
