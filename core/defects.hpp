// The defect catalog (docs/design.md §7) as data: every id `inject` accepts, the seed that
// describes it, the pull request that fixed it, the stage of the modelled stack it
// switches, the symptom mlactl shows, a plain-English explanation, and the fixture
// pair that demonstrates it. `mlactl defects` prints this; the batch parser checks
// `inject` ids against it (one list).
#pragma once
#include <string>
#include <vector>

namespace mlactl {

struct DefectInfo {
  std::string id;           // the `inject` id
  std::string seed;         // "000" .. "004"
  std::string fixed_by;     // vLLM pull request that fixed it, e.g. "#50476"
  std::string introduced;   // where it came from (a PR, an era), for the long view
  std::string stage;        // builder | router | planner | padding
  std::string where;        // the mlactl source files where the switch acts
  std::string changes;      // what switching it on changes (docs/design.md §7, column 3)
  std::string symptom;      // what mlactl shows (docs/design.md §7, column 4)
  std::string explanation;  // one paragraph for a user
  std::vector<std::string> extra_fixtures;  // further fixtures (by name) about the same defect
};

// In docs/design.md §7 order.
const std::vector<DefectInfo>& defect_catalog();

// nullptr when `id` is not a defect id.
const DefectInfo* find_defect(const std::string& id);
inline bool is_known_defect(const std::string& id) { return find_defect(id) != nullptr; }

// "a, b, c" of every id (for error messages).
std::string defect_id_list();
// "; did you mean \"ID\"?" naming the closest id to a mistyped one, or "" (core/suggest.hpp).
std::string defect_suggestion(const std::string& id);

// The fixture pair of a defect (docs/design.md §6): `<id>` with the defect on and its symptom
// expected, `<id>-fixed` without it and expected clean. Names, not paths: the files
// are fixtures/<name>.json.
inline std::string defect_fixture(const DefectInfo& d) { return d.id; }
inline std::string defect_fixed_fixture(const DefectInfo& d) { return d.id + "-fixed"; }

}  // namespace mlactl
