#include "options/argv_split.h"

#include <cctype>

#include "options/option_suggestion.h"
#include "options/refused_options.h"

namespace hvd::launcher {

namespace {

constexpr std::pair<const char*, const char*> kSingleDashWords[] = {
    {"-np", "--num-proc"},
    {"-cb", "--check-build"},
    {"-hostfile", "--hostfile"},
    {"-prefix-timestamp", "--prefix-output-with-timestamp"}};

// "-x", "--x"; not "-", "-1" or "-.5" (a value).
bool LooksLikeOption(const std::string& word) {
  return word.size() >= 2 && word[0] == '-' &&
         !std::isdigit(static_cast<unsigned char>(word[1])) && word[1] != '.';
}

// Every spelling of every option, for suggestions and abbreviations.
std::vector<std::string> KnownNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& name : option->get_lnames()) names.push_back("--" + name);
    for (const auto& name : option->get_snames()) names.push_back("-" + name);
  }
  for (const auto& [dash, long_name] : kSingleDashWords) names.push_back(dash);
  for (auto* refused = RefusedOptionsBegin(); refused != RefusedOptionsEnd();
       ++refused) {
    names.emplace_back(refused->name);
  }
  return names;
}

// The option `name` stands for: itself, or the one long option it is an
// unambiguous prefix of (argparse's abbreviations: --verb is --verbose).
// Empty when it is none.
std::string ResolveOptionName(const CLI::App& app, const std::string& name) {
  if (app.get_option_no_throw(name) || FindRefusedOption(name)) return name;
  // "-p22": a short option with its value attached.
  if (name.size() > 2 && name[1] != '-' &&
      app.get_option_no_throw(name.substr(0, 2))) {
    return name;
  }
  if (name.rfind("--", 0) != 0 || name.size() < 4) return "";
  std::string match;
  const CLI::Option* owner = nullptr;
  for (const CLI::Option* option : app.get_options()) {
    for (const auto& long_name : option->get_lnames()) {
      if (("--" + long_name).rfind(name, 0) != 0) continue;
      if (owner && owner != option) return "";  // ambiguous
      if (!owner) match = "--" + long_name;
      owner = option;
    }
  }
  return match;
}

}  // namespace

SplitArgs SplitAtCommand(const CLI::App& app,
                         const std::vector<std::string>& args) {
  SplitArgs split;
  size_t i = 0;
  while (i < args.size()) {
    std::string word = args[i];
    if (word == "--") {
      ++i;
      break;
    }
    if (!LooksLikeOption(word)) break;  // the command
    ++i;
    for (const auto& [dash, long_name] : kSingleDashWords) {
      const std::string spelled = dash;
      if (word == spelled || word.rfind(spelled + "=", 0) == 0) {
        word = std::string(long_name) + word.substr(spelled.size());
        break;
      }
    }
    const size_t equals = word.find('=');
    const std::string typed = word.substr(0, equals);
    const std::string name = ResolveOptionName(app, typed);
    if (name.empty()) {
      const std::vector<std::string> known = KnownNames(app);
      const std::vector<std::string> longer = NamesStartingWith(typed, known);
      if (typed.rfind("--", 0) == 0 && longer.size() > 1) {
        split.error = "ambiguous option " + typed + ": it begins " +
                      std::to_string(longer.size()) + " options (";
        for (size_t n = 0; n < longer.size(); ++n) {
          split.error += (n ? ", " : "") + longer[n];
        }
        split.error += "); type more of the name";
        return split;
      }
      std::string near = ClosestName(typed, known);
      split.error = "unknown option " + typed +
                    (near.empty() ? "" : "; did you mean " + near + "?");
      return split;
    }
    if (const RefusedOption* refused = FindRefusedOption(name)) {
      split.error = name + " is not supported: " + refused->reason;
      return split;
    }
    if (name != typed) word = name + word.substr(typed.size());
    split.options.push_back(word);
    if (equals != std::string::npos) continue;  // --flag=value
    // An option with its value attached ("-p22") takes no separate value.
    // As in argparse and CLI11, an option's values end early at the next
    // option; CLI11 then reports the missing value.
    const CLI::Option* option = app.get_option_no_throw(word);
    int values = option ? option->get_items_expected_max() : 0;
    for (int v = 0; v < values && i < args.size() && !LooksLikeOption(args[i]);
         ++v) {
      split.options.push_back(args[i++]);
    }
  }
  split.command.assign(args.begin() + static_cast<std::ptrdiff_t>(i),
                       args.end());
  return split;
}

}  // namespace hvd::launcher
