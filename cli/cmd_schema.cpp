// `mlactl schema`: the JSON Schema of the batch file.
#include "cli/app.hpp"

namespace mlactl::cli {

void setup_schema(CLI::App& app, Context& ctx) {
  auto* sub = app.add_subcommand("schema", "print the JSON Schema of the batch file (schema 1)");
  sub->callback([&ctx]() { print_json(*ctx.out, batch_json_schema()); });
}

}  // namespace mlactl::cli
