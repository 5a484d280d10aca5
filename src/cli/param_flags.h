// Binds a parameter table to a CLI11 subcommand: one flag per parameter (--name, its help line derived from the
// declaration: help, choices, bounds, unit, default, where it applies), grouped as declared. After parsing, the
// given flags are applied in table order through the table's own parser, so errors name the flag and are the same
// for every front end.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <map>
#include <string>

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

}  // namespace pimopt::cli
