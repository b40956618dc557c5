// simloop __complete WORD...: what may come in place of the last word after
// the others, one candidate a line, for the shell's completion
// (scripts/simloop-completion.bash). Everything comes from the program's own
// tables: subcommands and options from the CLI11 app, experiments from the
// data directory and the working directory, keys and their values from the
// schema, machines and stacks from the shipped profiles, result columns from
// the CSV named on the line or else from the output reference.
//
// Besides candidates, a line may be a directive to the shell script:
//   @files    also complete file names     @dirs     directory names only
//   @nospace  add no space after a candidate (a KEY= waits for its value)
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sim/config/data_files.h"
#include "sim/config/key_values.h"
#include "sim/engine/columns.h"
#include "sim/tools/cli/commands.h"

namespace simloop::cli {

namespace fs = std::filesystem;

namespace {

// What the words before the one being completed left open.
struct Context {
  const CLI::App* app = nullptr;         // the innermost subcommand named
  const CLI::Option* pending = nullptr;  // an option whose value is the last word
  std::vector<std::string> positionals;  // of `app`, in order
  std::vector<std::string> all_words;    // every word before the last
};

bool takes_value(const CLI::Option* opt) {
  return opt->get_type_size_max() > 0;
}

// An option of `app` or of the apps it falls through to.
const CLI::Option* find_option(const CLI::App* app, const std::string& name) {
  for (; app != nullptr; app = app->get_parent()) {
    if (const auto* o = app->get_option_no_throw(name)) return o;
    if (!app->get_fallthrough()) break;
  }
  return nullptr;
}

const CLI::App* find_subcommand(const CLI::App* app, const std::string& name) {
  for (const auto* sub : app->get_subcommands({}))
    if (sub->check_name(name)) return sub;
  return nullptr;
}

Context walk(const CLI::App& app, const std::vector<std::string>& before) {
  Context c;
  c.app = &app;
  c.all_words = before;
  bool only_positionals = false;
  for (const auto& w : before) {
    if (c.pending != nullptr) {
      c.pending = nullptr;
      continue;
    }
    if (!only_positionals && w == "--") {
      only_positionals = true;
      continue;
    }
    if (!only_positionals && w.size() > 1 && w[0] == '-') {
      if (w.find('=') != std::string::npos) continue;  // --opt=value
      const auto* opt = find_option(c.app, w);
      if (opt != nullptr && takes_value(opt)) c.pending = opt;
      continue;
    }
    if (c.positionals.empty() && !only_positionals)
      if (const auto* sub = find_subcommand(c.app, w)) {
        c.app = sub;
        continue;
      }
    c.positionals.push_back(w);
  }
  return c;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.starts_with(prefix);
}

// Experiments a user may name: the shipped ones (by the path from the data
// directory that runs them from anywhere) and the working directory's
// *.yaml. A name matches by its start or by its file name's.
std::vector<std::string> experiments(const std::string& cur) {
  std::set<std::string> names;
  for (const auto& f : config::shipped_files(config::data_root(), "experiments"))
    names.insert(f.name);
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(".", ec))
    if (e.path().extension() == ".yaml" && e.is_regular_file(ec))
      names.insert(e.path().filename().string());
  std::vector<std::string> out;
  for (const auto& n : names)
    if (starts_with(n, cur) || starts_with(fs::path(n).filename().string(), cur)) out.push_back(n);
  return out;
}

std::vector<std::string> profiles(const std::string& kind) {
  std::vector<std::string> out;
  for (const auto& f : config::shipped_files(config::data_root(), kind)) out.push_back(f.name);
  return out;
}

// KEY= for --set (the keys, then a key's values: its choices, or the
// shipped machines and stacks).
void complete_setting(const std::string& cur, bool with_value) {
  std::vector<std::string> keys = config::keys_under("");
  keys.insert(keys.begin(), {"machine", "stack"});
  const auto eq = cur.find('=');
  if (!with_value || eq == std::string::npos) {
    for (const auto& k : keys)
      if (starts_with(k, cur)) std::cout << k << (with_value ? "=" : "") << '\n';
    if (with_value) std::cout << "@nospace\n";
    return;
  }
  const std::string key = cur.substr(0, eq);
  const std::vector<std::string> values =
      config::is_profile_choice(key) ? profiles(key + "s") : config::key_values(key);
  for (const auto& v : values)
    if (starts_with(key + "=" + v, cur)) std::cout << key << '=' << v << '\n';
}

// The columns of the first CSV on the line, else every column runs and
// sweeps write.
std::vector<std::string> result_columns(const std::vector<std::string>& words) {
  for (const auto& w : words) {
    std::error_code ec;
    // Only an ordinary file is read: a FIFO of that name would block the shell.
    if (!w.ends_with(".csv") || !std::filesystem::is_regular_file(w, ec)) continue;
    std::ifstream in(w);
    std::string header;
    if (!std::getline(in, header)) continue;
    std::vector<std::string> out;
    for (size_t b = 0; b <= header.size();) {
      const size_t e = std::min(header.find(',', b), header.size());
      if (e > b) out.push_back(header.substr(b, e - b));
      b = e + 1;
    }
    return out;
  }
  std::vector<std::string> out;
  for (const auto& col : engine::output_columns())
    if (col.where == "run" || col.where == "sweep") out.push_back(col.name);
  return out;
}

// The values CLI11 checks an option against (IsMember: "TEXT:{a,b,c}").
std::vector<std::string> members(const CLI::Option* opt) {
  const std::string type = opt->get_type_name();
  const auto b = type.find(":{");
  const auto e = type.find('}', b);
  std::vector<std::string> out;
  if (b == std::string::npos || e == std::string::npos) return out;
  const std::string list = type.substr(b + 2, e - b - 2);
  for (size_t i = 0; i <= list.size();) {
    const size_t j = std::min(list.find(',', i), list.size());
    if (j > i) out.push_back(list.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

bool named(const CLI::Option* opt, std::initializer_list<const char*> names) {
  for (const auto* n : names)
    if (opt->check_lname(n)) return true;
  return false;
}

void complete_value(const Context& c, const CLI::Option* opt, const std::string& cur) {
  if (named(opt, {"set", "a-set", "b-set"})) return complete_setting(cur, true);
  if (named(opt, {"unset"})) return complete_setting(cur, false);
  if (named(opt, {"where", "series", "x", "train", "group"})) {
    for (const auto& col : result_columns(c.all_words))
      if (starts_with(col, cur)) std::cout << col << '\n';
    if (named(opt, {"where", "train", "group"})) std::cout << "@nospace\n";
    return;
  }
  if (const auto choices = members(opt); !choices.empty()) {
    for (const auto& v : choices)
      if (starts_with(v, cur)) std::cout << v << '\n';
    return;
  }
  const std::string type = opt->get_type_name();
  if (!type.starts_with("TEXT")) return;  // a number: nothing to offer
  for (const auto& l : opt->get_lnames())
    if (l.ends_with("-dir")) {
      std::cout << "@dirs\n";
      return;
    }
  std::cout << "@files\n";
}

// Positionals that name an experiment (or a file in its place).
bool names_experiment(const CLI::Option* pos) {
  for (const char* n : {"experiment", "A", "B", "fit"})
    if (pos->get_name() == n) return true;
  return false;
}

void complete_word(const Context& c, const std::string& cur) {
  if (c.pending != nullptr) return complete_value(c, c.pending, cur);
  if (!cur.empty() && cur[0] == '-') {
    if (const auto eq = cur.find('='); eq != std::string::npos) return;  // --opt=value: as typed
    std::set<std::string> names;
    for (const CLI::App* a = c.app; a != nullptr; a = a->get_parent()) {
      for (const auto* opt : a->get_options({})) {
        for (const auto& l : opt->get_lnames()) names.insert("--" + l);
        for (const auto& s : opt->get_snames()) names.insert("-" + s);
      }
      if (!a->get_fallthrough()) break;
    }
    for (const auto& n : names)
      if (starts_with(n, cur)) std::cout << n << '\n';
    return;
  }
  if (c.positionals.empty())
    for (const auto* sub : c.app->get_subcommands({}))
      if (!sub->get_group().empty() && starts_with(sub->get_name(), cur))
        std::cout << sub->get_name() << '\n';
  // The positional this word fills; one that takes many takes the rest.
  const CLI::Option* pos = nullptr;
  size_t index = 0;
  for (const auto* opt : c.app->get_options({})) {
    if (opt->nonpositional()) continue;
    pos = opt;
    const int many = opt->get_items_expected_max();
    if (many > 1 || index == c.positionals.size()) break;
    ++index;
    pos = nullptr;
  }
  if (pos == nullptr) return;
  if (names_experiment(pos)) {
    const auto found = experiments(cur);
    for (const auto& n : found) std::cout << n << '\n';
    if (!found.empty()) return;
  }
  std::cout << "@files\n";
}

}  // namespace

int complete_cmd(const CLI::App& app, const std::vector<std::string>& words) {
  if (words.empty()) return 0;
  const std::vector<std::string> before(words.begin(), words.end() - 1);
  complete_word(walk(app, before), words.back());
  return 0;
}

}  // namespace simloop::cli
