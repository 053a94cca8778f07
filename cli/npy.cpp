#include "cli/npy.hpp"

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/output.hpp"

namespace mlactl::cli {

int64_t NpyArray::num_elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string npy_shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int npy_item_size(const std::string& d) {
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=')) return 0;
  if (d[1] != 'f' && d[1] != 'u' && d[1] != 'i' && d[1] != 'b') return 0;
  if (!std::isdigit((unsigned char)d[2])) return 0;
  return d[2] - '0';
}

std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + npy_shape_string(shape) + ", }";
  while ((10 + header.size() + 1) % 64) header += ' ';
  header += '\n';
  const uint16_t hl = (uint16_t)header.size();
  std::string blob("\x93NUMPY\x01\x00", 8);
  blob.append((const char*)&hl, 2);
  blob += header;
  blob.append((const char*)data, nbytes);
  return blob;
}

void write_npy(const std::string& path, const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t nbytes) {
  write_file_atomic(path, npy_bytes(descr, shape, data, nbytes));
}

namespace {
// The value of 'key' in the header dict, as written by numpy: a quoted string, True/False
// or a parenthesised tuple.
std::string header_value(const std::string& h, const std::string& key) {
  const std::string k1 = "'" + key + "'", k2 = "\"" + key + "\"";
  size_t p = h.find(k1);
  if (p == std::string::npos) p = h.find(k2);
  if (p == std::string::npos) throw NpyError("the header has no '" + key + "'");
  p = h.find(':', p);
  if (p == std::string::npos) throw NpyError("the header's '" + key + "' has no value");
  ++p;
  while (p < h.size() && h[p] == ' ') ++p;
  if (p >= h.size()) throw NpyError("the header's '" + key + "' has no value");
  if (h[p] == '\'' || h[p] == '"') {
    const size_t e = h.find(h[p], p + 1);
    if (e == std::string::npos) throw NpyError("the header's '" + key + "' is not a closed string");
    return h.substr(p + 1, e - p - 1);
  }
  if (h[p] == '(') {
    const size_t e = h.find(')', p);
    if (e == std::string::npos) throw NpyError("the header's '" + key + "' is not a closed tuple");
    return h.substr(p, e - p + 1);
  }
  size_t e = p;
  while (e < h.size() && std::isalnum((unsigned char)h[e])) ++e;
  return h.substr(p, e - p);
}

std::vector<int64_t> parse_shape(const std::string& t) {
  std::vector<int64_t> shape;
  size_t i = 1;
  while (i < t.size() && t[i] != ')') {
    while (i < t.size() && (t[i] == ' ' || t[i] == ',')) ++i;
    if (t[i] == ')') break;
    if (!std::isdigit((unsigned char)t[i])) throw NpyError("the header's shape " + t + " is not a tuple of sizes");
    int64_t v = 0;
    while (i < t.size() && std::isdigit((unsigned char)t[i])) {
      v = v * 10 + (t[i] - '0');
      if (v > (int64_t(1) << 40)) throw NpyError("the header's shape " + t + " is too large");
      ++i;
    }
    shape.push_back(v);
  }
  return shape;
}
}  // namespace

NpyArray read_npy(const std::string& path, int64_t max_bytes) {
  // one open file, checked before it is read: a FIFO put there neither blocks (O_NONBLOCK)
  // nor is swapped in after the check (fstat on the descriptor); the size bounds the read
  // and the file may not grow past it while being read (issue 39)
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(errno == ENOENT ? "does not exist" : std::string("cannot be opened (") + std::strerror(errno) + ")");
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw std::runtime_error(std::string("cannot be read (") + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode)) throw std::runtime_error("is not a regular file");
  if (st.st_size > max_bytes)
    throw NpyError("is " + std::to_string((long long)st.st_size) + " bytes, more than the " + std::to_string(max_bytes) + " its shape allows");
  std::string blob((size_t)st.st_size, '\0');
  size_t got = 0;
  while (got < blob.size()) {
    const ssize_t n = ::read(fd, blob.data() + got, blob.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(std::string("cannot be read (") + std::strerror(errno) + ")");
    if (n == 0) break;
    got += (size_t)n;
  }
  blob.resize(got);  // a file that shrank meanwhile is caught as truncated below
  if (blob.size() < 10 || blob.compare(0, 6, "\x93NUMPY") != 0) throw NpyError("is not a .npy file (no \\x93NUMPY magic)");
  const int major = (unsigned char)blob[6];
  size_t hlen = 0, hstart = 0;
  if (major == 1) {
    hlen = (unsigned char)blob[8] | ((unsigned char)blob[9] << 8);
    hstart = 10;
  } else if (major == 2 || major == 3) {
    if (blob.size() < 12) throw NpyError("is truncated inside its header");
    hlen = (size_t)(unsigned char)blob[8] | ((size_t)(unsigned char)blob[9] << 8) | ((size_t)(unsigned char)blob[10] << 16) |
           ((size_t)(unsigned char)blob[11] << 24);
    hstart = 12;
  } else {
    throw NpyError("has .npy format version " + std::to_string(major) + ", not 1, 2 or 3");
  }
  if (hstart + hlen > blob.size()) throw NpyError("is truncated inside its header");
  const std::string h = blob.substr(hstart, hlen);
  NpyArray a;
  a.descr = header_value(h, "descr");
  if (header_value(h, "fortran_order") != "False") throw NpyError("is in Fortran order; the protocol takes C-order arrays");
  a.shape = parse_shape(header_value(h, "shape"));
  const int item = npy_item_size(a.descr);
  a.data = blob.substr(hstart + hlen);
  if (item > 0 && (int64_t)a.data.size() != a.num_elements() * item)
    throw NpyError("holds " + std::to_string(a.data.size()) + " data bytes, but its header says " + a.descr + " " + npy_shape_string(a.shape) +
                   " = " + std::to_string(a.num_elements() * item) + " bytes");
  return a;
}

}  // namespace mlactl::cli
