// `mlactl schema`: the JSON Schema of the batch file; with --output VERB, the schema of
// what VERB prints with --format json (cli/output_schema.hpp).
#include "core/batch_parse.hpp"
#include "cli/app.hpp"
#include "cli/output_schema.hpp"

namespace mlactl::cli {

void setup_schema(CLI::App& app, Context& ctx) {
  auto output = std::make_shared<std::string>();
  auto* sub = app.add_subcommand("schema", "print the JSON Schema of the batch file (schema 1), or with --output VERB of VERB's --format json output");
  std::string names;
  for (const auto& n : output_schema_names()) names += (names.empty() ? "" : ", ") + n;
  // `--output` here names a verb (the spelling, docs/design.md §6); the global
  // `-o FILE` still writes the schema to a file
  sub->add_option("--output", *output,
                  "the output whose schema to print: " + names + " (check-jsonl: one line of check --format jsonl; error: the error document)")
      ->check(CLI::IsMember(output_schema_names()));
  sub->callback([output, &ctx]() {
    if (output->empty()) {
      print_json(*ctx.out, batch_json_schema());
      return;
    }
    print_json(*ctx.out, *output_json_schema(*output));
  });
}

}  // namespace mlactl::cli
