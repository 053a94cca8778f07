#include "cli/common.hpp"

#include "core/route_input.hpp"

namespace mlactl::cli {

void add_kernel_option(CLI::App* sub, std::string& kernel) {
  sub->add_option("--kernel", kernel, "force a route")
      ->check(CLI::IsMember({"gluon_decode", "gluon_verify", "asm_persistent", "asm_nonpersistent", "triton_mla", "sparse_triton", "aiter_sparse"}));
}

RouteDecision decide_route(const Batch& b, const DecodeMetadata& md, const std::string& forced_kernel) {
  RouteInput ri = route_input_from_batch(b, md);
  if (!forced_kernel.empty()) ri.forced_route = forced_kernel;
  return route_decode(ri);
}

}  // namespace mlactl::cli
