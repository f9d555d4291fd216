#pragma once
// The delimited-text reader behind every trace reader in sim/ (openb.cpp, trace.cpp); internal to
// sim/, not an API. It keeps line numbers exact (one row per line, blank lines counted but not
// rows) and builds the messages openb.hpp describes: "FILE:LINE:COLUMN: column \"x\": \"v\" ...
// (allowed: ...)", and "FILE:1: ..." for a header problem.
//
// Dialects: CSV (',' with double quotes, "" for a quote inside one; a quoted field may not span
// lines) and plain tab-separated text without quoting (Gavel's Philly traces). A UTF-8 BOM and
// CRLF line ends are accepted in both.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/openb.hpp"
#include "sim/trace_error.hpp"

namespace gpuq::sim::csv {

inline constexpr std::size_t kNone = static_cast<std::size_t>(-1);
inline constexpr std::size_t kKeptErrors = 5;  // TraceReadReport::first_errors keeps this many

// A value as messages show it: in double quotes, cut short so a garbled line stays readable.
std::string shown(std::string_view v);
// "" or "nan" (pandas writes NaN so): the openb files' way of saying "no value".
inline bool is_absent(std::string_view v) { return v.empty() || v == "nan"; }
// The whole file; TraceError "PATH: cannot open: ..." otherwise.
std::string read_file(const std::string& path);
// Counts a row that was skipped, keeping the first kKeptErrors messages.
void note_skipped(TraceReadReport& report, const std::string& message);

struct ColumnSpec {
  std::string_view name;
  bool required;
};

struct Dialect {
  char separator = ',';
  bool quotes = true;  // false: a '"' is an ordinary character
};

// One pass over the text, a line at a time. Fields are views into the text (or, for a quoted
// field with "" inside, into a per-column scratch string), so a row costs no allocation beyond
// the strings the caller keeps.
class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& label, Dialect dialect = {});

  // Reads line 1 as the header: the position of each wanted column; kNone for an optional one
  // that is absent. A required column missing or a wanted one given twice throws.
  template <std::size_t N>
  std::array<std::size_t, N> header(const std::array<ColumnSpec, N>& wanted) {
    read_header();
    std::array<std::size_t, N> at{};
    for (std::size_t w = 0; w < N; ++w) at[w] = find_column(wanted[w].name, wanted[w].required);
    return at;
  }
  // For a format without a header: the fields' names, for messages and the field count check.
  void name_columns(std::vector<std::string> names);
  // The header's position of `name`, kNone when absent (and not required).
  std::size_t find_column(std::string_view name, bool required) const;
  // "FILE:1: column \"name\" WHY (found: ...)": a header problem.
  [[noreturn]] void fail_header(std::string_view name, std::string_view why) const;

  // Moves to the next non-blank line; false at the end. split_row() then reads its fields.
  bool next_line();
  // Splits the current line and checks its field count against the header's.
  void split_row();

  std::size_t line() const { return line_no_; }
  const std::string& label() const { return label_; }
  // An upper bound on the rows to come, for reserving.
  std::size_t max_rows() const;
  std::string_view field(std::size_t col) const { return fields_[col]; }
  const std::string& column_name(std::size_t col) const { return names_[col]; }

  [[noreturn]] void fail_at(std::size_t col, const std::string& what) const;
  // "FILE:LINE:COL: column \"name\": WHAT"
  [[noreturn]] void fail(std::size_t col, const std::string& what) const;
  // "FILE:LINE: WHAT", for a row problem that is no one column's.
  [[noreturn]] void fail_line(const std::string& what) const;

  // A whole number in 0..max; `unit` says what it counts, for the message.
  std::int64_t count(std::size_t col, std::int64_t max, std::string_view unit) const;
  // The same, or nullopt when the column is absent or the value is "nan" or empty.
  std::optional<std::int64_t> optional_count(std::size_t col, std::int64_t max,
                                             std::string_view unit) const;
  // A whole number in lo..hi, which may be negative.
  std::int64_t integer(std::size_t col, std::int64_t lo, std::int64_t hi,
                       std::string_view unit) const;
  std::string optional_text(std::size_t col) const;

 private:
  void read_header();
  void take_line();
  void split();
  std::size_t quoted_field(std::size_t open);
  std::string found_columns() const;

  std::string_view text_;
  const std::string& label_;
  Dialect dialect_;
  bool headerless_ = false;
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
  std::string_view line_;
  std::vector<std::string_view> fields_;
  std::deque<std::string> scratch_;
  std::vector<std::string> names_;  // the header's, kept: its fields' views may be scratch
};

// fail(), or fail_line() for a key that is no column's (key_col == kNone).
[[noreturn]] void bad_key(const CsvReader& in, std::size_t key_col, const std::string& what);

// Reads every row with parse_row, then checks the key (key(item), from column key_col; kNone
// when it has none): present and not seen before. A bad row throws, or with skip_bad_rows is
// counted and left out.
template <class T, class ParseRow, class Key>
std::vector<T> read_rows(CsvReader& in, std::size_t key_col, const TraceReadOptions& options,
                         TraceReadReport* report, ParseRow parse_row, Key key) {
  TraceReadReport counts;
  std::vector<T> out;
  // No reallocation ever happens, so the views of kept keys in `first_line` stay valid.
  out.reserve(in.max_rows());
  std::unordered_map<std::string_view, std::size_t> first_line;
  first_line.reserve(out.capacity());
  while (in.next_line()) {
    ++counts.rows;
    try {
      in.split_row();
      T item = parse_row(in);
      const std::string& k = key(item);
      if (k.empty()) bad_key(in, key_col, "\"\" is empty (allowed: a name unique in the file)");
      if (const auto it = first_line.find(k); it != first_line.end())
        bad_key(in, key_col,
                shown(k) + " is a duplicate (first on line " + std::to_string(it->second) + ")");
      out.push_back(std::move(item));
      first_line.emplace(key(out.back()), in.line());
    } catch (const TraceError& e) {
      if (!options.skip_bad_rows) throw;
      note_skipped(counts, e.what());
    }
  }
  if (report) *report = std::move(counts);
  return out;
}

}  // namespace gpuq::sim::csv
