#include "core/planners/registry.hpp"

namespace mlactl {

const char* to_string(PlannerId p) {
  switch (p) {
    case PlannerId::aiter: return "aiter";
    case PlannerId::gluon: return "gluon";
    case PlannerId::gluon_split: return "gluon-split";
    case PlannerId::triton: return "triton";
    case PlannerId::nonpersistent: return "nonpersistent";
    case PlannerId::sparse_rows: return "sparse-rows";
    case PlannerId::flashmla: return "flashmla";
    case PlannerId::fa3: return "fa3";
    case PlannerId::flashinfer_mla: return "flashinfer-mla";
    case PlannerId::sglang_triton: return "sglang-triton";
    case PlannerId::triton_extend: return "triton-extend";
    case PlannerId::captured: return "captured";
  }
  return "?";
}

const std::vector<PlannerId>& all_planners() {
  static const std::vector<PlannerId> ids = {PlannerId::aiter,  PlannerId::gluon,         PlannerId::gluon_split,
                                             PlannerId::triton, PlannerId::nonpersistent, PlannerId::sparse_rows,
                                             PlannerId::flashmla, PlannerId::fa3,         PlannerId::flashinfer_mla,
                                             PlannerId::sglang_triton, PlannerId::triton_extend};
  return ids;
}

std::optional<PlannerId> planner_from_string(const std::string& s) {
  for (PlannerId p : all_planners())
    if (s == to_string(p)) return p;
  return std::nullopt;
}

std::vector<std::string> planner_names() {
  std::vector<std::string> names;
  for (PlannerId p : all_planners()) names.push_back(to_string(p));
  return names;
}

}  // namespace mlactl
