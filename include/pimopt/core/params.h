// Parameters declared once. A ParamTable<Config> lists every user-facing parameter of a configuration struct: its
// name (the CLI flag is --name, a report or model-file key is the name), type, default, bounds, unit, help, group,
// the conditions under which it applies (e.g. only with --algo admm) and what it affects. Everything else is
// derived from the table: the struct's defaults (its constructor applies them), the CLI flags and --help, parsing
// and bounds checks (ConfigError naming the flag), the report's config block, the model file header and the
// checkpoint's record of the options it was written with. Modules declare the tables of their own structs
// (training, data sources, the PIM backend, the run) and a table can include another's entries (Include).
// XGBoost's parameter declarations (DMLC_DECLARE_FIELD) and Ramulator 2's name-indexed parameters are the models.
#pragma once

#include <algorithm>
#include <any>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "pimopt/core/error.h"

namespace pimopt {

using ParamValue = std::variant<bool, int64_t, uint64_t, double, std::string>;

enum class ParamType {
  kFlag,    // present or absent (a bool)
  kInt,     // a signed whole number
  kUint,    // an unsigned whole number
  kReal,    // a finite number
  kText,    // free text (a path, a list): the entry's own setter checks it
  kChoice,  // one of a list of names
};
const char* ParamTypeName(ParamType type);

// What a parameter can change. Checkpoints record the options with an effect and refuse to resume under others.
enum class ParamEffect {
  kResult,       // the trained model (and so every metric): also recorded in the model file
  kModeledTime,  // only the modeled PIM times
  kNone,         // where data comes from or goes, what is printed or evaluated, host threads: never the trajectory
};

struct ParamChoice {
  std::string name;
  std::string help;
  std::vector<std::string> aliases;
};

// The parameter applies only while `param` has one of `values` (canonical text).
// `list_values`, when set, gives the values when asked (a registry's names, known only once every registration ran:
// a table built during static registration must not read them then).
struct ParamCondition {
  std::string param;
  std::vector<std::string> values;
  std::function<std::vector<std::string>()> list_values;
  std::vector<std::string> Values() const { return list_values ? list_values() : values; }
};

struct ParamInfo {
  std::string name;
  std::string short_flag;  // e.g. "-q"
  ParamType type = ParamType::kText;
  std::string group;
  std::string help;
  std::string unit;
  std::optional<double> min, max;  // declared bounds
  bool min_exclusive = false;
  bool max_exclusive = false;
  std::optional<double> type_min, type_max;  // the field type's range (whole numbers), checked too, never shown
  std::string noun;                          // what a choice names, for messages ("hardware profile")
  std::string source;                        // where the default comes from (docs/sources.md keys)
  std::vector<ParamChoice> choices;
  std::function<std::vector<ParamChoice>()> list_choices;  // choices known only at run time (registries)
  std::vector<std::pair<std::string, std::string>> hints;  // a rejected value and what to do instead
  std::vector<ParamCondition> applies_when;                // all must hold
  ParamEffect effect = ParamEffect::kResult;
  bool may_change_on_resume = false;  // a result option a resumed run may change (the epoch count)
  bool required = false;
  ParamValue default_value;
  // A number that stands for "auto" (written --name auto): resolved later from what only the run knows (the data),
  // accepted by the checks although outside the bounds, shown as "auto".
  std::optional<ParamValue> auto_value;
  std::function<std::string()> default_note;  // shown instead of the default (e.g. "the algorithm's")

  std::string Flag() const { return "--" + name; }
  std::vector<ParamChoice> Choices() const { return list_choices ? list_choices() : choices; }
  std::string DefaultText() const;  // the note, or the default value ("-" for empty text)
  std::string BoundsText() const;   // e.g. "> 0", ">= 1", "0 .. 1", "> 0 or auto", "" for none
  std::string NumberBoundsText() const;  // the same without "or auto"
  std::string ChoicesText() const;  // "cpu | pim"
  std::string AppliesText() const;  // e.g. "--algo admm", "--backend pim, --model lr"; "" when always
  bool IsAuto(const ParamValue& value) const { return auto_value && value == *auto_value; }
  // FormatParamValue, or "auto" for the auto value.
  std::string Format(const ParamValue& value) const;
};

// Canonical text of a value (shortest round-trip numbers; flags true / false).
std::string FormatParamValue(const ParamValue& value);
// Parses `text` as a value of the parameter (type, finiteness, bounds; a choice's alias becomes its name); throws
// ConfigError naming the flag.
ParamValue ParseParamValue(const ParamInfo& info, std::string_view text);
// Throws ConfigError naming the flag when `value` breaks the parameter's bounds or choices.
void CheckParamValue(const ParamInfo& info, const ParamValue& value);

template <typename Config>
class ParamTable {
 public:
  struct Entry {
    ParamInfo info;
    std::function<ParamValue(const Config&)> get;
    std::function<void(Config&, const ParamValue&)> set;  // the value has the entry's type and passed its checks
  };

  // Fluent declaration of one entry (use it within the statement that adds the entry).
  class Builder {
   public:
    explicit Builder(ParamInfo& info) : info_(info) {}
    Builder& Help(std::string text) { return Set(info_.help, std::move(text)); }
    Builder& Noun(std::string noun) { return Set(info_.noun, std::move(noun)); }
    Builder& Source(std::string source) { return Set(info_.source, std::move(source)); }
    Builder& Group(std::string group) { return Set(info_.group, std::move(group)); }
    Builder& Unit(std::string unit) { return Set(info_.unit, std::move(unit)); }
    Builder& Short(std::string flag) { return Set(info_.short_flag, std::move(flag)); }
    Builder& Min(double v, bool exclusive = false) {
      info_.min = v;
      info_.min_exclusive = exclusive;
      return *this;
    }
    Builder& Max(double v, bool exclusive = false) {
      info_.max = v;
      info_.max_exclusive = exclusive;
      return *this;
    }
    Builder& Positive() { return Min(0, true); }
    Builder& AppliesWhen(std::string param, std::vector<std::string> values) {
      info_.applies_when.push_back({std::move(param), std::move(values), {}});
      return *this;
    }
    Builder& AppliesWhen(std::string param, std::function<std::vector<std::string>()> list_values) {
      info_.applies_when.push_back({std::move(param), {}, std::move(list_values)});
      return *this;
    }
    Builder& Effect(ParamEffect effect) { return Set(info_.effect, effect); }
    Builder& MayChangeOnResume() { return Set(info_.may_change_on_resume, true); }
    Builder& Required() { return Set(info_.required, true); }
    // `--name auto` sets the field to `sentinel`, which the run resolves (the default when declared with it).
    template <typename T>
    Builder& Auto(T sentinel) {
      ParamValue v = info_.default_value;
      std::visit([&](auto& held) {
        if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(held)>>) held = sentinel;
      }, v);
      return Set(info_.auto_value, std::optional<ParamValue>(v));
    }
    Builder& DefaultNote(std::function<std::string()> note) { return Set(info_.default_note, std::move(note)); }
    Builder& DefaultNote(std::string note) {
      return DefaultNote([note] { return note; });
    }
    Builder& Hint(std::string value, std::string what_instead) {
      info_.hints.emplace_back(std::move(value), std::move(what_instead));
      return *this;
    }
    Builder& Choices(std::vector<ParamChoice> choices) { return Set(info_.choices, std::move(choices)); }
    Builder& ListChoices(std::function<std::vector<ParamChoice>()> list) {
      return Set(info_.list_choices, std::move(list));
    }

   private:
    template <typename T, typename V>
    Builder& Set(T& field, V&& value) {
      field = std::forward<V>(value);
      return *this;
    }
    ParamInfo& info_;
  };

  // A field reached by `access` (a member pointer, or a generic callable `[](auto& c) -> auto& { ... }` that works
  // on Config& and const Config&), of type bool (a flag), a whole number, a real number or text. Whole-number fields get their type's
  // range as bounds.
  template <typename Access, typename T>
  Builder Add(std::string name, Access access, T default_value) {
    using Field = std::remove_cvref_t<std::invoke_result_t<Access, Config&>>;
    ParamInfo info;
    info.name = std::move(name);
    if constexpr (std::is_same_v<Field, bool>) {
      info.type = ParamType::kFlag;
      info.default_value = static_cast<bool>(default_value);
    } else if constexpr (std::is_integral_v<Field> && std::is_signed_v<Field>) {
      info.type = ParamType::kInt;
      info.default_value = static_cast<int64_t>(default_value);
      info.type_min = static_cast<double>(std::numeric_limits<Field>::min());
      info.type_max = static_cast<double>(std::numeric_limits<Field>::max());
    } else if constexpr (std::is_integral_v<Field>) {
      info.type = ParamType::kUint;
      info.default_value = static_cast<uint64_t>(default_value);
      info.type_min = 0;
      info.type_max = static_cast<double>(std::numeric_limits<Field>::max());
    } else if constexpr (std::is_floating_point_v<Field>) {
      info.type = ParamType::kReal;
      info.default_value = static_cast<double>(default_value);
    } else {
      static_assert(std::is_same_v<Field, std::string>, "unsupported parameter type");
      info.type = ParamType::kText;
      info.default_value = std::string(default_value);
    }
    auto get = [access](const Config& c) -> ParamValue {
      const auto& v = std::invoke(access, c);
      if constexpr (std::is_same_v<Field, bool> || std::is_same_v<Field, std::string>) {
        return v;
      } else if constexpr (std::is_integral_v<Field> && std::is_signed_v<Field>) {
        return static_cast<int64_t>(v);
      } else if constexpr (std::is_integral_v<Field>) {
        return static_cast<uint64_t>(v);
      } else {
        return static_cast<double>(v);
      }
    };
    auto set = [access](Config& c, const ParamValue& v) {
      auto& field = std::invoke(access, c);
      if constexpr (std::is_same_v<Field, bool>) {
        field = std::get<bool>(v);
      } else if constexpr (std::is_same_v<Field, std::string>) {
        field = std::get<std::string>(v);
      } else if constexpr (std::is_integral_v<Field> && std::is_signed_v<Field>) {
        field = static_cast<Field>(std::get<int64_t>(v));
      } else if constexpr (std::is_integral_v<Field>) {
        field = static_cast<Field>(std::get<uint64_t>(v));
      } else {
        field = static_cast<Field>(std::get<double>(v));
      }
    };
    return Push(std::move(info), std::move(get), std::move(set));
  }

  // A field of any type `E` (an enum, a bool) shown as one of named choices.
  template <typename Access, typename E>
  Builder AddChoice(std::string name, Access access, E default_value,
                    std::vector<std::pair<ParamChoice, E>> choices) {
    ParamInfo info;
    info.name = std::move(name);
    info.type = ParamType::kChoice;
    for (const auto& [choice, value] : choices) {
      info.choices.push_back(choice);
      if (value == default_value) info.default_value = choice.name;
    }
    PIMOPT_CHECK(std::holds_alternative<std::string>(info.default_value), info.name, ": default is not a choice");
    auto get = [access, choices](const Config& c) -> ParamValue {
      const E& v = std::invoke(access, c);
      // A text field may hold any text (a caller filled the struct): CheckValues then refuses it naming the flag.
      if constexpr (std::is_same_v<E, std::string>) return v;
      for (const auto& [choice, value] : choices) {
        if (value == v) return choice.name;
      }
      throw InternalError("a parameter holds a value that is none of its choices");
    };
    auto set = [access, choices](Config& c, const ParamValue& v) {
      for (const auto& [choice, value] : choices) {
        if (choice.name == std::get<std::string>(v)) std::invoke(access, c) = value;
      }
    };
    return Push(std::move(info), std::move(get), std::move(set));
  }

  // A parameter whose text maps to the config through its own functions (lists, pairs, inverted flags, names
  // checked by a registry). `set` receives the value with the entry's type and throws ConfigError when it is bad.
  Builder AddCustom(std::string name, ParamType type, ParamValue default_value,
                    std::function<ParamValue(const Config&)> get, std::function<void(Config&, const ParamValue&)> set) {
    ParamInfo info;
    info.name = std::move(name);
    info.type = type;
    info.default_value = std::move(default_value);
    return Push(std::move(info), std::move(get), std::move(set));
  }

  // Appends another table's entries, reached through `access` (a member pointer, or a generic callable that
  // works on Config& and const Config&, as Add's).
  template <typename Inner, typename Access>
  void Include(const ParamTable<Inner>& inner, Access access) {
    for (const auto& e : inner.entries()) {
      PIMOPT_CHECK(Find(e.info.name) == nullptr, "parameter ", e.info.name, " declared twice");
      entries_.push_back({e.info, [get = e.get, access](const Config& c) { return get(std::invoke(access, c)); },
                          [set = e.set, access](Config& c, const ParamValue& v) { set(std::invoke(access, c), v); }});
    }
  }

  const std::vector<Entry>& entries() const { return entries_; }
  const Entry* Find(std::string_view name) const {
    for (const auto& e : entries_) {
      if (e.info.name == name) return &e;
    }
    return nullptr;
  }
  const Entry& Get(std::string_view name) const {
    const Entry* e = Find(name);
    PIMOPT_CHECK(e != nullptr, "no parameter named ", name);
    return *e;
  }

  void ApplyDefaults(Config& c) const {
    for (const auto& e : entries_) e.set(c, e.info.default_value);
  }
  // Parses and sets one parameter from text (ConfigError naming the flag, or "unknown parameter").
  void SetText(Config& c, std::string_view name, std::string_view text) const {
    const Entry* e = Find(name);
    if (e == nullptr) throw ConfigError(StrCat("--", name), "unknown parameter");
    e->set(c, ParseParamValue(e->info, text));
  }
  std::string GetText(const Config& c, std::string_view name) const {
    const ParamInfo& info = Get(name).info;
    return info.Format(Get(name).get(c));
  }
  // Checks every entry's current value against its bounds and choices (ConfigError naming the flag).
  void CheckValues(const Config& c) const {
    for (const auto& e : entries_) CheckParamValue(e.info, e.get(c));
  }
  // CheckValues, and each value through its entry's own setter as if it had been given as text (a custom entry's
  // setter checks lists and names): for a struct a caller filled directly instead of through SetText.
  void CheckValuesAsSet(const Config& c) const {
    CheckValues(c);
    Config scratch = c;
    for (const auto& e : entries_) e.set(scratch, e.get(c));
  }
  // Whether the entry's conditions hold for `c` (conditions name entries of this table).
  bool Applies(const Entry& e, const Config& c) const {
    for (const ParamCondition& cond : e.info.applies_when) {
      const std::string value = GetText(c, cond.param);
      const std::vector<std::string> values = cond.Values();
      if (std::find(values.begin(), values.end(), value) == values.end()) return false;
    }
    return true;
  }
  // (name, canonical text) of every entry that applies to `c` and whose effect is one of `effects`, in order.
  std::vector<std::pair<std::string, std::string>> Describe(const Config& c, std::vector<ParamEffect> effects) const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& e : entries_) {
      if (std::find(effects.begin(), effects.end(), e.info.effect) == effects.end() || !Applies(e, c)) continue;
      out.emplace_back(e.info.name, GetText(c, e.info.name));
    }
    return out;
  }

 private:
  Builder Push(ParamInfo info, std::function<ParamValue(const Config&)> get,
               std::function<void(Config&, const ParamValue&)> set) {
    PIMOPT_CHECK(Find(info.name) == nullptr, "parameter ", info.name, " declared twice");
    entries_.push_back({std::move(info), std::move(get), std::move(set)});
    return Builder(entries_.back().info);
  }
  std::vector<Entry> entries_;
};

// `typed`'s entries over a holder of its struct in a std::any (a module whose struct the including table must not
// name: a backend's options in the run's configuration). The any must hold a Config when an entry is used.
template <typename Config>
ParamTable<std::any> EraseParamTable(const ParamTable<Config>& typed) {
  ParamTable<std::any> erased;
  erased.Include(typed, [](auto& holder) -> auto& {
    using Held = std::conditional_t<std::is_const_v<std::remove_reference_t<decltype(holder)>>, const Config, Config>;
    Held* held = std::any_cast<Held>(&holder);
    PIMOPT_CHECK(held != nullptr, "a parameter's options hold another type");
    return *held;
  });
  return erased;
}

// Option structs of several modules, each held in a std::any under its module's name (a registered backend's or
// algorithm's): what a configuration carries for whichever of them it picks, without naming their types. The
// registries fill it with each module's defaults (BackendOptionSet, AlgorithmOptionSet).
class NamedOptions {
 public:
  void Add(const std::string& name, std::any options) { options_[name] = std::move(options); }
  // A programming error for a name without options.
  std::any& Of(const std::string& name) {
    const auto it = options_.find(name);
    PIMOPT_CHECK(it != options_.end(), "no options for '", name, "'");
    return it->second;
  }
  const std::any& Of(const std::string& name) const {
    const auto it = options_.find(name);
    PIMOPT_CHECK(it != options_.end(), "no options for '", name, "'");
    return it->second;
  }
  // The options of `name` as its struct (a programming error when it holds another).
  template <typename Options>
  Options& As(const std::string& name) {
    Options* o = std::any_cast<Options>(&Of(name));
    PIMOPT_CHECK(o != nullptr, "the options of '", name, "' are of another type");
    return *o;
  }
  template <typename Options>
  const Options& As(const std::string& name) const {
    const Options* o = std::any_cast<Options>(&Of(name));
    PIMOPT_CHECK(o != nullptr, "the options of '", name, "' are of another type");
    return *o;
  }

 private:
  std::map<std::string, std::any> options_;
};

}  // namespace pimopt
