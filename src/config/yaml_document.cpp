#include "yaml_document.hpp"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "mantissa/error.hpp"
#include "mantissa/escaped_text.hpp"
#include "mantissa/utf8_text.hpp"

namespace mantissa::config::detail {

YAML::Node load_yaml_document(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    std::vector<YAML::Node> documents = YAML::LoadAll(text);
    if (documents.size() > 1) {
      throw Error(source + ": " + std::to_string(documents.size()) +
                  " YAML documents (a config is one; a second after '---' would be ignored)");
    }
    if (!documents.empty()) root = documents.front();
  } catch (const YAML::DeepRecursion& e) {
    throw Error(source + ": nested too deeply for the YAML parser (line " +
                std::to_string(e.mark.line + 1) + "; no config nests more than " +
                std::to_string(kMaxYamlDepth) + " levels)");
  } catch (const YAML::Exception& e) {
    throw Error(source + ": not valid YAML (" + e.what() + ")");
  }
  check_yaml_document(root, source);
  return root;
}

namespace {

bool has_control_character(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

// YAML's non-specific tags: "?" (a plain scalar, a mapping, a list) and "!" (a quoted scalar).
// An explicit one (!!str, !!int, !foo) would change how a value reads; no setting takes one.
bool explicit_tag(const YAML::Node& n) {
  return n.Tag() != "?" && n.Tag() != "!" && !n.Tag().empty();
}

}  // namespace

void check_yaml_document(const YAML::Node& root, const std::string& source) {
  struct Item {
    YAML::Node node;
    std::string path;
    int depth;
  };
  const auto at = [](const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
  };
  std::vector<Item> todo{{root, "", 0}};  // a walk without recursion
  long visited = 0;
  while (!todo.empty()) {
    Item item = std::move(todo.back());
    todo.pop_back();
    // Aliases make a small text a huge tree (each level listing the one before ten times):
    // the walk, and every reader after it, would take hours. No config comes near the bound.
    if (++visited > kMaxYamlNodes) {
      throw Error(source + ": more than " + std::to_string(kMaxYamlNodes) +
                  " values once its YAML aliases (*name) are expanded (no config holds this "
                  "many; aliases that repeat aliases?)");
    }
    if (item.depth > kMaxYamlDepth) {
      throw Error(source + ": " + (item.path.empty() ? "the document" : item.path) +
                  " is nested more than " + std::to_string(kMaxYamlDepth) +
                  " levels deep (no config nests this deep)");
    }
    if (explicit_tag(item.node)) {
      throw Error(source + ": " +
                  (item.path.empty() ? "the document" : escape_controls(item.path)) +
                  ": the YAML tag '" + escape_controls(item.node.Tag()) +
                  "' (mantissa's settings take no tags: write the value plainly, a string in "
                  "quotes)");
    }
    if (item.node.IsScalar() && !valid_utf8(item.node.Scalar())) {
      throw Error(source + ": " +
                  (item.path.empty() ? "the document" : escape_controls(item.path)) +
                  ": the value is not UTF-8 text (each checkpoint stores the run's config in "
                  "its JSON header)");
    }
    if (item.node.IsSequence()) {
      for (std::size_t i = 0; i < item.node.size(); ++i) {
        todo.push_back({item.node[i], item.path + "[" + std::to_string(i) + "]", item.depth + 1});
      }
    } else if (item.node.IsMap()) {
      std::set<std::string> seen;
      for (const auto& kv : item.node) {
        if (!kv.first.IsScalar()) continue;  // the reader names a list or mapping used as a key
        const std::string& key = kv.first.Scalar();
        if (!valid_utf8(key)) {
          throw Error(source + ": " + escape_controls(at(item.path, key)) +
                      ": a key that is not UTF-8 text");
        }
        if (has_control_character(key)) {
          throw Error(source + ": " + escape_controls(at(item.path, key)) +
                      ": a key with a control character (keys are words)");
        }
        // yaml-cpp reads `<<: *base` as a key named "<<", not as YAML 1.1's merge of *base.
        if (key == "<<" && kv.first.Tag() == "?") {
          throw Error(source + ": " + at(item.path, key) +
                      ": a YAML merge key, which mantissa's YAML reader does not expand (write "
                      "the keys out; an alias can stand for a whole value: `key: *name`)");
        }
        if (!seen.insert(key).second) {
          throw Error(source + ": " + at(item.path, key) +
                      ": the key is given twice in one mapping (YAML allows it once; which "
                      "value is meant?)");
        }
        todo.push_back({kv.second, at(item.path, key), item.depth + 1});
      }
    }
  }
}

}  // namespace mantissa::config::detail
