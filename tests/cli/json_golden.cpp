// Compares a JSON output with its golden file, ignoring the fields that name the
// run rather than the result ("argv", "tool"). Prints the first difference.
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>

using nlohmann::json;

static json load(const char* path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(std::string("cannot open ") + path);
  return json::parse(in);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: json_golden GOLDEN ACTUAL\n";
    return 2;
  }
  try {
    json g = load(argv[1]), a = load(argv[2]);
    for (json* j : {&g, &a}) {
      j->erase("argv");
      j->erase("tool");
    }
    if (g == a) return 0;
    json patch = json::diff(g, a);
    std::cout << "first differences (JSON patch from golden to actual):\n" << patch.dump(2).substr(0, 4000) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "json_golden: " << e.what() << "\n";
    return 2;
  }
}
