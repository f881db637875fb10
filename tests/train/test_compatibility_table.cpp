// docs/compatibility.md is true: every row has a known status and, where it departs from the
// vendor, a reason; no row says "missing"; every accepted YAML key of the table appears in a
// config of tests/train/compat/ that parses (and a refused one in none); the row counts the
// page states are the table's.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "vendor_configs.hpp"

namespace mantissa::train {
namespace {

struct Row {
  std::string vendor, kind, mantissa, status, notes;
  int line = 0;
};

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(' '), e = s.find_last_not_of(' ');
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string compatibility_page() {
  std::ifstream in(std::string(MANTISSA_SOURCE_DIR) + "/docs/compatibility.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The table's rows (group headings, whose kind is empty, left out).
std::vector<Row> table_rows(const std::string& page) {
  std::vector<Row> rows;
  std::stringstream in(page);
  int n = 0;
  bool header_seen = false;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.rfind("| vendor | kind |", 0) == 0) {
      header_seen = true;
      continue;
    }
    if (!header_seen || line.rfind("| ", 0) != 0) continue;
    std::vector<std::string> cells;
    std::stringstream cs(line.substr(1));
    for (std::string c; std::getline(cs, c, '|');) cells.push_back(trim(c));
    EXPECT_EQ(cells.size(), 5u) << "line " << n << ": " << line;
    if (cells.size() != 5 || cells[1].empty()) continue;
    rows.push_back({cells[0], cells[1], cells[2], cells[3], cells[4], n});
  }
  return rows;
}

// Every key path of every compat config (list positions left out), split at the dots.
std::vector<std::vector<std::string>> compat_key_paths() {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> path;
  std::function<void(const YAML::Node&)> walk = [&](const YAML::Node& n) {
    if (n.IsMap()) {
      for (const auto& kv : n) {
        path.push_back(kv.first.as<std::string>());
        out.push_back(path);
        walk(kv.second);
        path.pop_back();
      }
    } else if (n.IsSequence()) {
      for (const YAML::Node& item : n) walk(item);
    }
  };
  for (const auto& f : std::filesystem::directory_iterator(compat_path(""))) {
    if (f.path().extension() != ".yaml") continue;
    for (const YAML::Node& doc : YAML::LoadAllFromFile(f.path().string())) walk(doc);
  }
  return out;
}

// `a.b.c` of the table matches a config path ending in a, b, c; <Name> matches any key.
bool matches(const std::vector<std::string>& want, const std::vector<std::string>& have) {
  if (have.size() < want.size()) return false;
  const std::size_t off = have.size() - want.size();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (want[i] != "<Name>" && want[i] != have[off + i]) return false;
  }
  return true;
}

std::vector<std::string> first_path(const std::string& vendor) {
  const auto b = vendor.find('`'), e = vendor.find('`', b + 1);
  std::vector<std::string> parts;
  if (b == std::string::npos || e == std::string::npos) return parts;
  std::stringstream s(vendor.substr(b + 1, e - b - 1));
  for (std::string p; std::getline(s, p, '.');) parts.push_back(p);
  return parts;
}

const std::set<std::string> kStatuses = {"same",      "renamed", "deprecated",
                                         "different", "n/a",     "refused"};

TEST(CompatibilityTable, EveryRowHasAStatusAndEveryDepartureAReason) {
  const std::vector<Row> rows = table_rows(compatibility_page());
  ASSERT_GT(rows.size(), 300u);
  for (const Row& r : rows) {
    const std::string where = "docs/compatibility.md:" + std::to_string(r.line);
    EXPECT_EQ(kStatuses.count(r.status), 1u) << where << " status '" << r.status << "'";
    if (r.status == "different" || r.status == "n/a" || r.status == "refused") {
      EXPECT_FALSE(r.notes.empty()) << where << ": a " << r.status << " row needs its reason";
    }
    if (r.status == "renamed" || r.status == "deprecated") {
      EXPECT_FALSE(r.mantissa.empty()) << where << ": name mantissa's spelling";
    }
    for (const std::string* cell : {&r.vendor, &r.mantissa, &r.status, &r.notes}) {
      std::string lower = *cell;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char ch) { return std::tolower(ch); });
      EXPECT_EQ(lower.find("missing"), std::string::npos) << where;
    }
  }
}

TEST(CompatibilityTable, EveryAcceptedYamlKeyIsInACompatConfigThatParses) {
  for (const auto& f : std::filesystem::directory_iterator(compat_path(""))) {
    if (f.path().extension() != ".yaml") continue;
    const std::string file = f.path().filename().string();
    const std::size_t docs = compat_documents(file).size();
    for (std::size_t i = 0; i < docs; ++i) {
      EXPECT_NO_THROW(compat_config(file, i)) << file << " document " << i;
    }
  }
  const auto paths = compat_key_paths();
  std::size_t checked = 0;
  for (const Row& r : table_rows(compatibility_page())) {
    if (r.kind != "yaml") continue;
    const std::vector<std::string> want = first_path(r.vendor);
    ASSERT_FALSE(want.empty()) << "docs/compatibility.md:" << r.line
                               << ": a yaml row names its key";
    const bool found = std::any_of(paths.begin(), paths.end(),
                                   [&](const auto& have) { return matches(want, have); });
    if (r.status == "refused") {
      EXPECT_FALSE(found) << "docs/compatibility.md:" << r.line << " is refused but in a config";
    } else {
      EXPECT_TRUE(found) << "docs/compatibility.md:" << r.line << ": " << r.vendor
                         << " is in no config of tests/train/compat/";
    }
    ++checked;
  }
  EXPECT_GT(checked, 200u);
}

TEST(CompatibilityTable, TheStatedCountsAreTheTables) {
  const std::string page = compatibility_page();
  std::map<std::string, int> count;
  const std::vector<Row> rows = table_rows(page);
  for (const Row& r : rows) ++count[r.status];
  std::string stated = "Rows: " + std::to_string(rows.size()) + " (";
  bool first = true;
  for (const char* s : {"same", "renamed", "deprecated", "different", "n/a", "refused"}) {
    stated += (first ? "" : ", ") + std::string(s) + " " + std::to_string(count[s]);
    first = false;
  }
  stated += ").";
  EXPECT_NE(page.find(stated), std::string::npos) << "the page should say: " << stated;
}

}  // namespace
}  // namespace mantissa::train
