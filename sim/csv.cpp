#include "sim/csv.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace gpuq::sim::csv {

std::string shown(std::string_view v) {
  constexpr std::size_t kMaxShown = 60;
  std::string s = "\"";
  s.append(v.substr(0, kMaxShown));
  if (v.size() > kMaxShown) s += "...";
  s += '"';
  return s;
}

std::string read_file(const std::string& path) {
  std::error_code ec;
  // A folder opens as a stream on Linux, but has no size to read.
  if (std::filesystem::is_directory(path, ec))
    throw TraceError(path + ": is a folder (allowed: a file)");
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  const std::streamoff size = f.tellg();
  if (size < 0) throw TraceError(path + ": cannot read: " + std::strerror(errno));
  std::string text(static_cast<std::size_t>(size), '\0');
  f.seekg(0);
  if (!f.read(text.data(), static_cast<std::streamsize>(text.size())))
    throw TraceError(path + ": cannot read: " + std::strerror(errno));
  return text;
}

void note_skipped(TraceReadReport& report, const std::string& message) {
  ++report.skipped;
  if (report.first_errors.size() < kKeptErrors) report.first_errors.push_back(message);
}

void bad_key(const CsvReader& in, std::size_t key_col, const std::string& what) {
  if (key_col == kNone) in.fail_line(what);
  in.fail(key_col, what);
}

CsvReader::CsvReader(std::string_view text, const std::string& label, Dialect dialect)
    : text_(text), label_(label), dialect_(dialect) {
  if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);
}

void CsvReader::read_header() {
  take_line();
  split();
  names_.assign(fields_.begin(), fields_.end());
}

void CsvReader::name_columns(std::vector<std::string> names) {
  names_ = std::move(names);
  headerless_ = true;
}

std::size_t CsvReader::find_column(std::string_view name, bool required) const {
  std::size_t at = kNone;
  for (std::size_t i = 0; i < names_.size(); ++i) {
    if (names_[i] != name) continue;
    if (at != kNone)
      throw TraceError(label_ + ":1:" + std::to_string(i + 1) + ": column " + shown(names_[i]) +
                       " appears twice (first as column " + std::to_string(at + 1) + ")");
    at = i;
  }
  if (at == kNone && required) fail_header(name, "is missing");
  return at;
}

void CsvReader::fail_header(std::string_view name, std::string_view why) const {
  throw TraceError(label_ + ":1: column " + shown(name) + " " + std::string(why) +
                   " (found: " + found_columns() + ")");
}

bool CsvReader::next_line() {
  while (pos_ < text_.size()) {
    take_line();
    if (!line_.empty()) return true;
  }
  return false;
}

void CsvReader::split_row() {
  split();
  const std::size_t n = fields_.size(), want = names_.size();
  if (n == want) return;  // the message below is built only on failure: this runs every row
  const std::string counts = "the row has " + std::to_string(n) + " fields, the " +
                             (headerless_ ? "format " : "header ") + std::to_string(want);
  if (n < want) fail(n, "missing: " + counts);
  fail_at(want,
          shown(fields_[want]) + " is an extra field: " + counts +
              (dialect_.quotes ? " (a comma inside a value needs double quotes around it)" : ""));
}

std::size_t CsvReader::max_rows() const {
  return static_cast<std::size_t>(std::count(text_.begin(), text_.end(), '\n')) + 1;
}

void CsvReader::fail_at(std::size_t col, const std::string& what) const {
  throw TraceError(label_ + ":" + std::to_string(line_no_) + ":" + std::to_string(col + 1) + ": " +
                   what);
}

void CsvReader::fail(std::size_t col, const std::string& what) const {
  fail_at(col, "column " + shown(names_[col]) + ": " + what);
}

void CsvReader::fail_line(const std::string& what) const {
  throw TraceError(label_ + ":" + std::to_string(line_no_) + ": " + what);
}

std::int64_t CsvReader::count(std::size_t col, std::int64_t max, std::string_view unit) const {
  const std::string_view v = fields_[col];
  std::int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  const bool whole = !v.empty() && end == v.data() + v.size();
  const char* problem = nullptr;
  if (whole && ec == std::errc() && x >= 0 && x <= max) return x;
  if (whole && (ec == std::errc::result_out_of_range || x > max))
    problem = v[0] == '-' ? " is negative" : " is too large";
  else if (whole && x < 0)
    problem = " is negative";
  else
    problem = " is not a whole number";
  fail(col,
       shown(v) + problem + " (allowed: 0.." + std::to_string(max) + " " + std::string(unit) + ")");
}

std::optional<std::int64_t> CsvReader::optional_count(std::size_t col, std::int64_t max,
                                                      std::string_view unit) const {
  if (col == kNone || is_absent(fields_[col])) return std::nullopt;
  return count(col, max, unit);
}

std::int64_t CsvReader::integer(std::size_t col, std::int64_t lo, std::int64_t hi,
                                std::string_view unit) const {
  const std::string_view v = fields_[col];
  std::int64_t x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  const bool whole = !v.empty() && end == v.data() + v.size();
  if (whole && ec == std::errc() && x >= lo && x <= hi) return x;
  std::string problem = " is not a whole number";
  if (whole && (ec == std::errc::result_out_of_range ? v[0] == '-' : x < lo))
    problem = " is below " + std::to_string(lo);
  else if (whole)
    problem = " is above " + std::to_string(hi);
  fail(col, shown(v) + problem + " (allowed: " + std::to_string(lo) + ".." + std::to_string(hi) +
                (unit.empty() ? "" : " ") + std::string(unit) + ")");
}

std::string CsvReader::optional_text(std::size_t col) const {
  if (col == kNone || is_absent(fields_[col])) return {};
  return std::string(fields_[col]);
}

void CsvReader::take_line() {
  std::size_t end = text_.find('\n', pos_);
  if (end == std::string_view::npos) end = text_.size();
  line_ = text_.substr(pos_, end - pos_);
  pos_ = end + 1;
  ++line_no_;
  if (line_.ends_with('\r')) line_.remove_suffix(1);
}

void CsvReader::split() {
  fields_.clear();
  std::size_t pos = 0;
  for (;;) {
    if (dialect_.quotes && pos < line_.size() && line_[pos] == '"') {
      pos = quoted_field(pos);
    } else {
      const std::size_t sep = std::min(line_.find(dialect_.separator, pos), line_.size());
      fields_.push_back(line_.substr(pos, sep - pos));
      pos = sep;
    }
    if (pos == line_.size()) return;
    ++pos;  // past the separator
  }
}

// Reads the quoted field opening at `open`; returns the position after its closing quote.
std::size_t CsvReader::quoted_field(std::size_t open) {
  const std::size_t col = fields_.size();
  std::size_t close = line_.find('"', open + 1);
  if (close != std::string_view::npos && line_.substr(close).starts_with("\"\"")) {
    // "" inside: unescape into this column's scratch (a deque keeps earlier views valid).
    if (scratch_.size() <= col) scratch_.resize(col + 1);
    std::string& out = scratch_[col];
    out.clear();
    std::size_t from = open + 1;
    while (close != std::string_view::npos && line_.substr(close).starts_with("\"\"")) {
      out.append(line_.substr(from, close + 1 - from));
      from = close + 2;
      close = line_.find('"', from);
    }
    if (close != std::string_view::npos) out.append(line_.substr(from, close - from));
    fields_.push_back(out);
  } else if (close != std::string_view::npos) {
    fields_.push_back(line_.substr(open + 1, close - open - 1));
  }
  if (close == std::string_view::npos)
    fail_at(col,
            "a quoted field has no closing quote on its line (\"\" stands for a quote inside one)");
  if (close + 1 < line_.size() && line_[close + 1] != dialect_.separator)
    fail_at(col, "text after a quoted field's closing quote (allowed: a comma or the line's end)");
  return close + 1;
}

std::string CsvReader::found_columns() const {
  std::string s;
  for (const auto& n : names_) s += (s.empty() ? "" : ", ") + shown(n);
  // An empty text's header is one empty field: say so plainly.
  return names_.size() == 1 && names_[0].empty() ? "nothing" : s;
}

}  // namespace gpuq::sim::csv
