// Minimal .npy (NumPy format version 1.0 / 2.0 / 3.0) writer and reader: the arrays of the
// external-executor protocol (docs/executor-protocol.md) and of `run --dump-dir`. C order
// only, little-endian scalar dtypes; numpy and torch read what this writes without mlactl.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mlactl::cli {

// A .npy file that is not what the reader was asked for; what() says why in a sentence
// that names no path (the caller adds the file).
struct NpyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct NpyArray {
  std::string descr;            // e.g. "<f4", "<u2", "|u1", "<i4"
  std::vector<int64_t> shape;
  std::string data;             // raw little-endian bytes, C order
  int64_t num_elements() const;
};

// "(2, 16, 512)" as numpy prints a shape.
std::string npy_shape_string(const std::vector<int64_t>& shape);
// Bytes of one element of a descr this module knows ('<f4', '<f8', '<f2', '<u2', '|u1', '<i4', '<i8', ...); 0 if unknown.
int npy_item_size(const std::string& descr);

// The file contents (header padded to 64 bytes, version 1.0).
std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t nbytes);
// Writes through a temporary file and a rename.
void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t nbytes);
// Reads and checks the format; refuses files over max_bytes before reading them.
// Throws NpyError (bad magic, truncated, Fortran order, a header it cannot parse, a data
// size that disagrees with the shape) or std::runtime_error when the file cannot be opened.
NpyArray read_npy(const std::string& path, int64_t max_bytes);

}  // namespace mlactl::cli
