// Parsing of the five cron fields into value sets.
#include "schedule/cron_fields.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <sstream>
#include <vector>

namespace benchfleet::schedule {
namespace {

// The fields in the order they are written.
enum Field : int { kMinute, kHour, kDayOfMonth, kMonth, kDayOfWeek, kFieldCount };

struct FieldRule {
  const char* name;
  int min;
  int max;                         // largest value accepted in the expression
  const char* const* value_names;  // names of min, min+1, ...; nullptr when none
  int value_name_count;
  const char* value_names_meaning;  // "month name (JAN-DEC)"
};

constexpr const char* kMonthNames[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN",
                                       "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"};
constexpr const char* kWeekdayNames[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"};

constexpr int kSunday = 0;
constexpr int kSundayAsSeven = 7;

constexpr std::array<FieldRule, kFieldCount> kFieldRules = {{
    {"minute", 0, 59, nullptr, 0, nullptr},
    {"hour", 0, 23, nullptr, 0, nullptr},
    {"day-of-month", 1, 31, nullptr, 0, nullptr},
    {"month", 1, 12, kMonthNames, 12, "month name (JAN-DEC)"},
    {"day-of-week", 0, 7, kWeekdayNames, 7, "weekday name (SUN-SAT)"},
}};

// The most days each month can have (February in leap years).
constexpr int kMaxDaysInMonth[13] = {0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

// Parses one field; every error names the field by position and name.
class FieldParser {
 public:
  FieldParser(int index, const std::string& text)
      : index_(index), rule_(kFieldRules[index]), text_(text) {}

  StatusOr<uint64_t> Parse() const {
    uint64_t allowed = 0;
    for (size_t start = 0;;) {
      size_t comma = text_.find(',', start);
      std::string element = text_.substr(start, comma == std::string::npos ? comma : comma - start);
      if (element.empty()) return Error("empty element in list \"" + text_ + "\"");
      ASSIGN_OR_RETURN(uint64_t values, ParseElement(element));
      allowed |= values;
      if (comma == std::string::npos) return allowed;
      start = comma + 1;
    }
  }

 private:
  // `*`, `N`, `A-B`, `*/S` or `A-B/S`.
  StatusOr<uint64_t> ParseElement(const std::string& element) const {
    size_t slash = element.find('/');
    std::string base = element.substr(0, slash);
    int step = 1;
    if (slash != std::string::npos) {
      std::string step_text = element.substr(slash + 1);
      std::optional<int> parsed = ParseNumber(step_text);
      if (!parsed)
        return Error("step \"" + step_text + "\" in \"" + element + "\" is not a number");
      if (*parsed < 1) return Error("step in \"" + element + "\" must be at least 1");
      step = *parsed;
    }
    int first = 0;
    int last = 0;
    size_t dash = base.find('-');
    if (base == "*") {
      first = rule_.min;
      last = index_ == kDayOfWeek ? kSundayAsSeven - 1 : rule_.max;
    } else if (dash != std::string::npos) {
      ASSIGN_OR_RETURN(first, ParseValue(base.substr(0, dash), element));
      ASSIGN_OR_RETURN(last, ParseValue(base.substr(dash + 1), element));
      // FRI-SUN: Sunday closes the week as 7.
      if (index_ == kDayOfWeek && last == kSunday && first > kSunday) last = kSundayAsSeven;
      if (first > last) {
        return Error("range \"" + base + "\" runs backwards (" + std::to_string(first) + " > " +
                     std::to_string(last) + ")");
      }
    } else {
      if (slash != std::string::npos)
        return Error("\"" + element + "\": a step needs * or a range before the /");
      ASSIGN_OR_RETURN(first, ParseValue(base, element));
      last = first;
    }
    uint64_t values = 0;
    for (int v = first; v <= last; v += step) {
      int folded = index_ == kDayOfWeek ? v % kSundayAsSeven : v;
      values |= uint64_t{1} << folded;
    }
    return values;
  }

  // A number or, in the month and day-of-week fields, a three-letter name.
  StatusOr<int> ParseValue(const std::string& token, const std::string& element) const {
    if (token.empty()) return Error("\"" + element + "\" is missing a value");
    if (std::optional<int> number = ParseNumber(token)) {
      if (*number < rule_.min || *number > rule_.max) {
        return Error(token + " is out of range " + std::to_string(rule_.min) + "-" +
                     std::to_string(rule_.max));
      }
      return *number;
    }
    if (rule_.value_names != nullptr && token.size() == 3) {
      std::string upper;
      for (char c : token) upper += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      for (int i = 0; i < rule_.value_name_count; ++i) {
        if (upper == rule_.value_names[i]) return rule_.min + i;
      }
    }
    std::string expected = rule_.value_names
                               ? std::string("a number or ") + rule_.value_names_meaning
                               : std::string("a number");
    return Error("\"" + token + "\" is not " + expected);
  }

  // Digits only; values too large for any field saturate instead of overflowing.
  static std::optional<int> ParseNumber(const std::string& text) {
    constexpr int kSaturated = 1000000;
    if (text.empty()) return std::nullopt;
    int value = 0;
    for (char c : text) {
      if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
      value = std::min(kSaturated, value * 10 + (c - '0'));
    }
    return value;
  }

  Status Error(const std::string& what) const {
    return InvalidArgument("cron field " + std::to_string(index_ + 1) + " (" + rule_.name +
                           "): " + what);
  }

  int index_;
  const FieldRule& rule_;
  const std::string& text_;
};

std::vector<std::string> SplitOnSpaces(const std::string& text) {
  std::vector<std::string> words;
  std::stringstream in(text);
  std::string word;
  while (in >> word) words.push_back(word);
  return words;
}

// With day-of-week `*`, a day must be one of the listed days of the month; when none of
// them exists in any listed month ("0 0 30 2 *"), the spec never fires. Every other spec
// fires at least once in any 8 years: a weekday occurs in every month, and a day of a
// month occurs yearly except Feb 29, which 2100 skips.
bool CanFire(const CronFields& f) {
  if (!f.any_day_of_week) return true;
  for (int month = 1; month <= 12; ++month) {
    if (!(f.months >> month & 1)) continue;
    for (int day = 1; day <= kMaxDaysInMonth[month]; ++day) {
      if (f.days_of_month >> day & 1) return true;
    }
  }
  return false;
}

}  // namespace

StatusOr<CronFields> CronFields::Parse(const std::string& cron) {
  std::vector<std::string> words = SplitOnSpaces(cron);
  if (words.size() != kFieldCount) {
    return InvalidArgument(
        "cron: expected 5 fields (minute hour day-of-month month day-of-week), got " +
        std::to_string(words.size()));
  }
  std::array<uint64_t, kFieldCount> sets{};
  for (int i = 0; i < kFieldCount; ++i) {
    ASSIGN_OR_RETURN(sets[i], FieldParser(i, words[i]).Parse());
  }
  CronFields fields;
  fields.minutes = sets[kMinute];
  fields.hours = sets[kHour];
  fields.days_of_month = sets[kDayOfMonth];
  fields.months = sets[kMonth];
  fields.days_of_week = sets[kDayOfWeek];
  fields.any_day_of_month = words[kDayOfMonth] == "*";
  fields.any_day_of_week = words[kDayOfWeek] == "*";
  if (!CanFire(fields)) {
    return InvalidArgument("cron \"" + cron + "\" never fires: day-of-month " + words[kDayOfMonth] +
                           " never occurs in month " + words[kMonth]);
  }
  return fields;
}

}  // namespace benchfleet::schedule
