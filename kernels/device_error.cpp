// The device error word's text (describe_device_error): plain host code.
#include "kernels/mla_decode.hpp"

namespace mla {

std::string describe_device_error(const int32_t* words) {
  if (words[0] == 0) return {};
  std::string text = "device error:";
  const struct {
    int32_t bit;
    const char* what;
  } bits[] = {
      {kErrWorkIndptr, " work_indptr out of range"},
      {kErrQRows, " a work's q rows are outside the q tensor"},
      {kErrKvRange, " a work's kv range is outside the kv index list"},
      {kErrKvSlot, " KV slot read past the end of the KV cache (slot * head_dim beyond num_slots * kv_row_stride)"},
      {kErrPartialRows, " partial rows outside the partial buffer"},
      {kErrReduceMap, " reduce map out of range"},
      {kErrStall, " stage-1 pipeline stalled (a wait gave up after ~2 s: a kernel bug, please report)"},
  };
  bool first = true;
  for (const auto& b : bits) {
    if (words[0] & b.bit) {
      text += first ? "" : ";";
      text += b.what;
      first = false;
    }
  }
  text += " (first at work/tile " + std::to_string(words[1]) + ", value " + std::to_string(words[2]) + ")";
  return text;
}

}  // namespace mla
