#include "core/route.hpp"

#include <algorithm>
#include <cctype>

namespace mlactl {

const char* to_string(Route r) {
  switch (r) {
    case Route::gluon_decode: return "gluon_decode";
    case Route::gluon_verify: return "gluon_verify";
    case Route::asm_persistent: return "asm_persistent";
    case Route::asm_nonpersistent: return "asm_nonpersistent";
    case Route::triton_mla: return "triton_mla";
    case Route::sparse_triton: return "sparse_triton";
    case Route::aiter_sparse: return "aiter_sparse";
    case Route::flash_attn_mla: return "flash_attn_mla";
    case Route::flashmla: return "flashmla";
    case Route::flashmla_sparse: return "flashmla_sparse";
    case Route::flashinfer_mla: return "flashinfer_mla";
    case Route::triton_extend: return "triton_extend";
    case Route::refused: return "refused";
  }
  return "?";
}

std::optional<Route> route_from_string(const std::string& s) {
  std::string id = s;
  std::transform(id.begin(), id.end(), id.begin(), [](unsigned char c) { return std::tolower(c); });
  std::replace(id.begin(), id.end(), '-', '_');
  for (Route r : {Route::gluon_decode, Route::gluon_verify, Route::asm_persistent, Route::asm_nonpersistent,
                  Route::triton_mla, Route::sparse_triton, Route::aiter_sparse, Route::flash_attn_mla, Route::flashmla,
                  Route::flashmla_sparse, Route::flashinfer_mla, Route::triton_extend, Route::refused}) {
    if (id == to_string(r)) return r;
  }
  return std::nullopt;
}

}  // namespace mlactl
