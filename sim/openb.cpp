#include "sim/openb.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <fstream>
#include <string_view>
#include <unordered_map>

namespace gpuq::sim {
namespace {

constexpr std::size_t kNone = static_cast<std::size_t>(-1);
constexpr std::int64_t kMaxGpusPerNode = 255;
// memory_mib is scaled by 2^20; this bound keeps the bytes within kMaxQuantity.
constexpr std::int64_t kMaxMib = kMaxQuantity >> 20;
constexpr std::size_t kKeptErrors = 5;

// A value as messages show it: in double quotes, cut short so a garbled line stays readable.
std::string shown(std::string_view v) {
  constexpr std::size_t kMaxShown = 60;
  std::string s = "\"";
  s.append(v.substr(0, kMaxShown));
  if (v.size() > kMaxShown) s += "...";
  s += '"';
  return s;
}

bool is_absent(std::string_view v) { return v.empty() || v == "nan"; }

struct ColumnSpec {
  std::string_view name;
  bool required;
};

// One pass over the text, a line at a time. Fields are views into the text (or, for a quoted
// field with "" inside, into a per-column scratch string), so a row costs no allocation beyond
// the strings the caller keeps.
class CsvReader {
 public:
  CsvReader(std::string_view text, const std::string& label) : text_(text), label_(label) {
    if (text_.starts_with("\xEF\xBB\xBF")) text_.remove_prefix(3);
  }

  // The header's position of each wanted column; kNone for an optional one that is absent.
  template <std::size_t N>
  std::array<std::size_t, N> header(const std::array<ColumnSpec, N>& wanted) {
    take_line();
    split();
    names_.assign(fields_.begin(), fields_.end());
    std::array<std::size_t, N> at{};
    for (std::size_t w = 0; w < N; ++w) {
      at[w] = kNone;
      for (std::size_t i = 0; i < names_.size(); ++i) {
        if (names_[i] != wanted[w].name) continue;
        if (at[w] != kNone)
          fail_at(i, "column " + shown(names_[i]) + " appears twice (first as column " +
                         std::to_string(at[w] + 1) + ")");
        at[w] = i;
      }
      if (at[w] == kNone && wanted[w].required)
        throw TraceError(label_ + ":1: column " + shown(wanted[w].name) +
                         " is missing (found: " + found_columns() + ")");
    }
    return at;
  }

  // Moves to the next non-blank line; false at the end. split() then reads its fields.
  bool next_line() {
    while (pos_ < text_.size()) {
      take_line();
      if (!line_.empty()) return true;
    }
    return false;
  }

  // Splits the current line and checks its field count against the header's.
  void split_row() {
    split();
    const std::size_t n = fields_.size(), want = names_.size();
    if (n == want) return;  // the message below is built only on failure: this runs every row
    const std::string counts =
        "the row has " + std::to_string(n) + " fields, the header " + std::to_string(want);
    if (n < want) fail(n, "missing: " + counts);
    fail_at(want, shown(fields_[want]) + " is an extra field: " + counts +
                      " (a comma inside a value needs double quotes around it)");
  }

  std::size_t line() const { return line_no_; }
  // An upper bound on the rows to come, for reserving.
  std::size_t max_rows() const {
    return static_cast<std::size_t>(std::count(text_.begin(), text_.end(), '\n')) + 1;
  }
  std::string_view field(std::size_t col) const { return fields_[col]; }

  [[noreturn]] void fail_at(std::size_t col, const std::string& what) const {
    throw TraceError(label_ + ":" + std::to_string(line_no_) + ":" + std::to_string(col + 1) +
                     ": " + what);
  }
  [[noreturn]] void fail(std::size_t col, const std::string& what) const {
    fail_at(col, "column " + shown(names_[col]) + ": " + what);
  }

  // A whole number in 0..max; `unit` says what it counts, for the message.
  std::int64_t count(std::size_t col, std::int64_t max, std::string_view unit) const {
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
    fail(col, shown(v) + problem + " (allowed: 0.." + std::to_string(max) + " " +
                  std::string(unit) + ")");
  }

  // The same, or nullopt when the column is absent or the value is "nan" or empty.
  std::optional<std::int64_t> optional_count(std::size_t col, std::int64_t max,
                                             std::string_view unit) const {
    if (col == kNone || is_absent(fields_[col])) return std::nullopt;
    return count(col, max, unit);
  }

  std::string optional_text(std::size_t col) const {
    if (col == kNone || is_absent(fields_[col])) return {};
    return std::string(fields_[col]);
  }

 private:
  void take_line() {
    std::size_t end = text_.find('\n', pos_);
    if (end == std::string_view::npos) end = text_.size();
    line_ = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    ++line_no_;
    if (line_.ends_with('\r')) line_.remove_suffix(1);
  }

  void split() {
    fields_.clear();
    std::size_t pos = 0;
    for (;;) {
      if (pos < line_.size() && line_[pos] == '"') {
        pos = quoted_field(pos);
      } else {
        const std::size_t comma = std::min(line_.find(',', pos), line_.size());
        fields_.push_back(line_.substr(pos, comma - pos));
        pos = comma;
      }
      if (pos == line_.size()) return;
      ++pos;  // past the comma
    }
  }

  // Reads the quoted field opening at `open`; returns the position after its closing quote.
  std::size_t quoted_field(std::size_t open) {
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
      fail_at(
          col,
          "a quoted field has no closing quote on its line (\"\" stands for a quote inside one)");
    if (close + 1 < line_.size() && line_[close + 1] != ',')
      fail_at(col,
              "text after a quoted field's closing quote (allowed: a comma or the line's end)");
    return close + 1;
  }

  std::string found_columns() const {
    std::string s;
    for (const auto& n : names_) s += (s.empty() ? "" : ", ") + shown(n);
    // An empty text's header is one empty field: say so plainly.
    return names_.size() == 1 && names_[0].empty() ? "nothing" : s;
  }

  std::string_view text_;
  const std::string& label_;
  std::size_t pos_ = 0;
  std::size_t line_no_ = 0;
  std::string_view line_;
  std::vector<std::string_view> fields_;
  std::deque<std::string> scratch_;
  std::vector<std::string> names_;  // the header's, kept: its fields' views may be scratch
};

// Reads every row with parse_row, then checks the name: present and not seen before. A bad row
// throws, or with skip_bad_rows is counted and left out.
template <class T, class ParseRow>
std::vector<T> read_rows(CsvReader& in, std::size_t name_col, const TraceReadOptions& options,
                         TraceReadReport* report, ParseRow parse_row) {
  TraceReadReport counts;
  std::vector<T> out;
  // No reallocation ever happens, so the views of kept names in `first_line` stay valid.
  out.reserve(in.max_rows());
  std::unordered_map<std::string_view, std::size_t> first_line;
  first_line.reserve(out.capacity());
  while (in.next_line()) {
    ++counts.rows;
    try {
      in.split_row();
      T item = parse_row(in);
      if (item.name.empty())
        in.fail(name_col, "\"\" is empty (allowed: a name unique in the file)");
      if (const auto it = first_line.find(item.name); it != first_line.end())
        in.fail(name_col, shown(item.name) + " is a duplicate (first on line " +
                              std::to_string(it->second) + ")");
      out.push_back(std::move(item));
      first_line.emplace(out.back().name, in.line());
    } catch (const TraceError& e) {
      if (!options.skip_bad_rows) throw;
      ++counts.skipped;
      if (counts.first_errors.size() < kKeptErrors) counts.first_errors.emplace_back(e.what());
    }
  }
  if (report) *report = std::move(counts);
  return out;
}

// The openb convention: a CPU-only pod asks 0 milli; a one-GPU pod asks a share (1..1000) of
// one GPU; a multi-GPU pod asks whole GPUs, 1000 each. (count() has already kept milli <= 1000.)
void check_gpu_milli(const CsvReader& in, std::size_t col, std::int64_t num_gpu,
                     std::int64_t milli) {
  const char* why = nullptr;
  if (num_gpu == 0 && milli != 0) why = ": a CPU-only pod takes no GPU (allowed: 0)";
  if (num_gpu >= 1 && milli < 1) why = " is outside 1..1000 (allowed: 1..1000 milli-GPU per GPU)";
  if (num_gpu > 1 && milli != kMilliPerGpu)
    why = ": a share of a GPU is only for one-GPU pods (allowed: 1000)";
  // The message is built only on failure: this runs for every row.
  if (why) in.fail(col, shown(in.field(col)) + " with num_gpu " + std::to_string(num_gpu) + why);
}

std::vector<std::string> gpu_models(const CsvReader& in, std::size_t col) {
  std::vector<std::string> models;
  if (col == kNone || is_absent(in.field(col))) return models;
  const std::string_view spec = in.field(col);
  for (std::size_t from = 0; from <= spec.size();) {
    const std::size_t bar = std::min(spec.find('|', from), spec.size());
    if (bar == from)
      in.fail(col, shown(spec) +
                       " has an empty model name (allowed: models separated by '|', "
                       "or \"nan\" or empty for any model)");
    models.emplace_back(spec.substr(from, bar - from));
    from = bar + 1;
  }
  return models;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  std::string text(static_cast<std::size_t>(f.tellg()), '\0');
  f.seekg(0);
  if (!f.read(text.data(), static_cast<std::streamsize>(text.size())))
    throw TraceError(path + ": cannot read: " + std::strerror(errno));
  return text;
}

}  // namespace

std::vector<OpenbNode> parse_openb_nodes(const std::string& text, const std::string& label,
                                         const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 5> kColumns{
      {{"sn", true}, {"cpu_milli", true}, {"memory_mib", true}, {"gpu", true}, {"model", false}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  return read_rows<OpenbNode>(in, c[0], options, report, [&c](const CsvReader& row) {
    OpenbNode n;
    n.name = std::string(row.field(c[0]));
    n.cpu_milli = row.count(c[1], kMaxQuantity, "millicores");
    n.memory_bytes = row.count(c[2], kMaxMib, "MiB") << 20;
    n.gpus = static_cast<int>(row.count(c[3], kMaxGpusPerNode, "GPUs per node"));
    n.model = row.optional_text(c[4]);
    return n;
  });
}

std::vector<OpenbPod> parse_openb_pods(const std::string& text, const std::string& label,
                                       const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 10> kColumns{{{"name", true},
                                                        {"cpu_milli", true},
                                                        {"memory_mib", true},
                                                        {"num_gpu", true},
                                                        {"gpu_milli", true},
                                                        {"gpu_spec", false},
                                                        {"qos", false},
                                                        {"creation_time", false},
                                                        {"deletion_time", false},
                                                        {"scheduled_time", false}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  return read_rows<OpenbPod>(in, c[0], options, report, [&c](const CsvReader& row) {
    OpenbPod p;
    p.name = std::string(row.field(c[0]));
    p.cpu_milli = row.count(c[1], kMaxQuantity, "millicores");
    p.memory_bytes = row.count(c[2], kMaxMib, "MiB") << 20;
    // No node holds more than 255 GPUs, so no pod can use more.
    const std::int64_t num_gpu = row.count(c[3], kMaxGpusPerNode, "GPUs");
    const std::int64_t milli = row.count(c[4], kMilliPerGpu, "milli-GPU per GPU");
    check_gpu_milli(row, c[4], num_gpu, milli);
    p.num_gpu = static_cast<int>(num_gpu);
    p.gpu_milli = static_cast<int>(milli);
    p.gpu_models = gpu_models(row, c[5]);
    p.qos = row.optional_text(c[6]);
    p.creation_time = row.optional_count(c[7], kMaxQuantity, "seconds");
    p.deletion_time = row.optional_count(c[8], kMaxQuantity, "seconds");
    p.scheduled_time = row.optional_count(c[9], kMaxQuantity, "seconds");
    return p;
  });
}

std::vector<OpenbNode> read_openb_nodes(const std::string& path, const TraceReadOptions& options,
                                        TraceReadReport* report) {
  return parse_openb_nodes(read_file(path), path, options, report);
}

std::vector<OpenbPod> read_openb_pods(const std::string& path, const TraceReadOptions& options,
                                      TraceReadReport* report) {
  return parse_openb_pods(read_file(path), path, options, report);
}

}  // namespace gpuq::sim
