// Binds a parameter table to a CLI11 subcommand: one flag per parameter (--name, its help line derived from the
// declaration: help, choices, bounds, unit, default, where it applies), grouped as declared. After parsing, the
// given flags are applied in table order through the table's own parser, so errors name the flag and are the same
// for every front end. CommandFlags binds all of a command's tables.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "pimopt/core/params.h"

namespace pimopt::cli {

// The one-line help of a parameter, as --help and `pimopt params` show it.
std::string ParamHelp(const ParamInfo& info);

class ParamFlags {
 public:
  // Binds every entry of `table`. A name another table bound already keeps its flag; its help gains this table's
  // default (`pimopt gen`'s --rows serves the dense and the sparse generator).
  template <typename Config>
  void Add(CLI::App* command, const ParamTable<Config>& table) {
    for (const auto& e : table.entries()) Bind(command, e.info);
  }
  void Add(CLI::App* command, const std::vector<const ParamInfo*>& infos) {
    for (const ParamInfo* info : infos) Bind(command, *info);
  }
  bool Given(const std::string& name) const { return bound_.count(name) && bound_.at(name).option->count() > 0; }
  // Calls set(name, text) for every flag given on the command line, in declaration order.
  void ForEachGiven(const std::function<void(const std::string& name, const std::string& text)>& set) const;

 private:
  void Bind(CLI::App* command, const ParamInfo& info);
  struct Bound {
    CLI::Option* option = nullptr;
    bool is_flag = false;
    bool flag = false;
    std::string text;
    std::string default_text;
  };
  std::vector<std::string> order_;
  std::map<std::string, Bound> bound_;  // nodes stay put: CLI11 writes into them
};

// The table as text (`pimopt params`) or as the Markdown tables of the README (one per group).
template <typename Config>
std::vector<const ParamInfo*> Infos(const ParamTable<Config>& table) {
  std::vector<const ParamInfo*> infos;
  for (const auto& e : table.entries()) infos.push_back(&e.info);
  return infos;
}
std::string ParamsAsText(const std::vector<const ParamInfo*>& infos);
std::string ParamsAsMarkdown(const std::vector<const ParamInfo*>& infos);

// A command's flags: every one declared in a parameter table (the command's own or a library's), bound to the
// command by ParamFlags, and applied after parsing through the table's own parser, so each value is checked once,
// the same way for every front end, before anything uses it.
class CommandFlags {
 public:
  using Setter = std::function<void(const std::string& name, const std::string& text)>;
  explicit CommandFlags(CLI::App* command) : command_(command) {}
  // A table's flags, set on `target`; once all are set, a given flag whose conditions (AppliesWhen) do not hold is
  // refused naming it.
  template <typename Config>
  CommandFlags& Add(const ParamTable<Config>& table, Config& target) {
    Add(Infos(table), [&table, &target](const std::string& name, const std::string& text) {
      table.SetText(target, name, text);
    });
    ParamFlags* flags = groups_.back().flags.get();
    checks_.push_back([flags, &table, &target] {
      for (const auto& e : table.entries()) {
        if (flags->Given(e.info.name) && !table.Applies(e, target)) {
          throw ConfigError(e.info.Flag(), StrCat("only meaningful with ", e.info.AppliesText()));
        }
      }
    });
    return *this;
  }
  CommandFlags& Add(const std::vector<const ParamInfo*>& infos, Setter set) {
    groups_.push_back({std::make_unique<ParamFlags>(), std::move(set)});
    groups_.back().flags->Add(command_, infos);
    for (const ParamInfo* info : infos) {
      if (std::none_of(infos_.begin(), infos_.end(), [&](const ParamInfo* i) { return i->name == info->name; })) {
        infos_.push_back(info);
      }
    }
    return *this;
  }
  void Apply() const {
    for (const Group& g : groups_) g.flags->ForEachGiven(g.set);
    for (const auto& check : checks_) check();
  }
  bool Given(const std::string& name) const {
    return std::any_of(groups_.begin(), groups_.end(), [&](const Group& g) { return g.flags->Given(name); });
  }
  const std::vector<const ParamInfo*>& infos() const { return infos_; }
  CLI::App* command() const { return command_; }

 private:
  struct Group {
    std::unique_ptr<ParamFlags> flags;
    Setter set;
  };
  CLI::App* command_;
  std::vector<Group> groups_;
  std::vector<std::function<void()>> checks_;
  std::vector<const ParamInfo*> infos_;
};

}  // namespace pimopt::cli
