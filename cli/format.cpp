#include "cli/format.hpp"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <boost/json.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <sstream>

#include "api/to_proto.hpp"
#include "cli/batch_format.hpp"
#include "cli/batch_script.hpp"
#include "cli/requests.hpp"
#include "spec/quantity.hpp"

namespace gpuq::cli {

OutputFormat parse_output_format(const std::string& text) {
  if (text == "table") return OutputFormat::kTable;
  if (text == "wide") return OutputFormat::kWide;
  if (text == "json") return OutputFormat::kJson;
  if (text == "yaml") return OutputFormat::kYaml;
  throw UsageError("-o \"" + text + "\": use table, wide, json or yaml");
}

namespace {

// A string that a YAML reader would take for a number, a bool or null must be quoted.
bool needs_quotes(const std::string& s) {
  if (s.empty()) return true;
  static const char* kSpecial[] = {"true", "false", "yes",   "no",    "on",  "off", "null",
                                   "~",    "True",  "False", "Yes",   "No",  "On",  "Off",
                                   "Null", "NULL",  "TRUE",  "FALSE", "YES", "NO",  "ON",
                                   "OFF",  "y",     "n",     "Y",     "N"};
  for (const char* k : kSpecial)
    if (s == k) return true;
  const unsigned char c = static_cast<unsigned char>(s[0]);
  return std::isdigit(c) || c == '-' || c == '+' || c == '.';
}

// JSON values as YAML through libyaml's emitter (block style; empty maps and lists inline).
class YamlOut {
 public:
  YamlOut() {
    yaml_emitter_initialize(&e_);
    yaml_emitter_set_output(&e_, &YamlOut::write, &out_);
    yaml_emitter_set_unicode(&e_, 1);
    yaml_emitter_set_width(&e_, -1);  // no folding of long strings
  }
  ~YamlOut() { yaml_emitter_delete(&e_); }
  YamlOut(const YamlOut&) = delete;
  YamlOut& operator=(const YamlOut&) = delete;

  std::string document(const boost::json::value& v) {
    yaml_event_t ev;
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    emit(ev);
    yaml_document_start_event_initialize(&ev, nullptr, nullptr, nullptr, 1);
    emit(ev);
    value(v);
    yaml_document_end_event_initialize(&ev, 1);
    emit(ev);
    yaml_stream_end_event_initialize(&ev);
    emit(ev);
    return std::move(out_);
  }

 private:
  static int write(void* data, unsigned char* buffer, std::size_t size) {
    static_cast<std::string*>(data)->append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }
  void emit(yaml_event_t& ev) {
    // Fails only on a sequence of events that is not YAML, which value() never makes.
    if (!yaml_emitter_emit(&e_, &ev)) throw std::runtime_error(std::string("yaml: ") + (e_.problem ? e_.problem : "?"));
  }
  void scalar(const std::string& text, yaml_scalar_style_t style) {
    yaml_event_t ev;
    yaml_scalar_event_initialize(&ev, nullptr, nullptr,
                                 reinterpret_cast<yaml_char_t*>(const_cast<char*>(text.data())),
                                 static_cast<int>(text.size()), 1, 1, style);
    emit(ev);
  }
  void value(const boost::json::value& v) {
    yaml_event_t ev;
    switch (v.kind()) {
      case boost::json::kind::object: {
        const auto& o = v.get_object();
        yaml_mapping_start_event_initialize(&ev, nullptr, nullptr, 1,
                                            o.empty() ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE);
        emit(ev);
        for (const auto& kv : o) {
          scalar(std::string(kv.key()), YAML_ANY_SCALAR_STYLE);
          value(kv.value());
        }
        yaml_mapping_end_event_initialize(&ev);
        emit(ev);
        break;
      }
      case boost::json::kind::array: {
        const auto& a = v.get_array();
        yaml_sequence_start_event_initialize(&ev, nullptr, nullptr, 1,
                                             a.empty() ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
        emit(ev);
        for (const auto& x : a) value(x);
        yaml_sequence_end_event_initialize(&ev);
        emit(ev);
        break;
      }
      case boost::json::kind::string: {
        std::string s(v.get_string());
        scalar(s, needs_quotes(s) ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
        break;
      }
      case boost::json::kind::bool_: scalar(v.get_bool() ? "true" : "false", YAML_PLAIN_SCALAR_STYLE); break;
      case boost::json::kind::int64: scalar(std::to_string(v.get_int64()), YAML_PLAIN_SCALAR_STYLE); break;
      case boost::json::kind::uint64: scalar(std::to_string(v.get_uint64()), YAML_PLAIN_SCALAR_STYLE); break;
      case boost::json::kind::double_: {
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, v.get_double());  // 0.4567, not 0.45669999
        scalar(std::string(buf, r.ptr), YAML_PLAIN_SCALAR_STYLE);
        break;
      }
      case boost::json::kind::null: scalar("null", YAML_PLAIN_SCALAR_STYLE); break;
    }
  }

  yaml_emitter_t e_;
  std::string out_;
};

}  // namespace

std::string to_yaml(const google::protobuf::Message& m) {
  return YamlOut().document(boost::json::parse(to_json(m, false)));
}

std::string render_message(const google::protobuf::Message& m, OutputFormat f) {
  return f == OutputFormat::kYaml ? to_yaml(m) : to_json(m);
}

std::string human_milli(std::int64_t milli) {
  if (milli % 1000 == 0) return std::to_string(milli / 1000);
  std::string s = std::to_string(milli / 1000) + ".";
  char frac[8];
  std::snprintf(frac, sizeof frac, "%03lld", static_cast<long long>(std::abs(milli % 1000)));
  std::string f = frac;
  while (!f.empty() && f.back() == '0') f.pop_back();
  if (milli < 0 && milli > -1000) s = "-" + s;
  return s + f;
}

std::string human_bytes(std::int64_t bytes) {
  static const char* kUnits[] = {"Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
  if (bytes < 1024) return std::to_string(bytes);
  double v = static_cast<double>(bytes);
  int u = -1;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (v == static_cast<double>(static_cast<std::int64_t>(v)))
    std::snprintf(buf, sizeof buf, "%lld%s", static_cast<long long>(v), kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f%s", v, kUnits[u]);
  return buf;
}

std::string human_age(std::int64_t s) {
  if (s < 0) s = 0;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 2 * 3600) return std::to_string(s / 60) + "m";
  if (s < 2 * 86400) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

std::string state_name(v1::JobState s) {
  const auto state = api::from_proto(s);
  return state ? to_string(*state) : "-";
}

v1::JobState parse_state(const std::string& text) {
  std::string up;
  for (char c : text) up += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up.rfind("JOB_STATE_", 0) != 0) up = "JOB_STATE_" + up;
  v1::JobState s{};
  if (up != "JOB_STATE_UNSPECIFIED" && v1::JobState_Parse(up, &s)) return s;
  throw UsageError(
      "--state \"" + text +
      "\": use pending, admitted, running, preempting, succeeded, failed or cancelled");
}

bool is_finished(v1::JobState s) {
  const auto state = api::from_proto(s);
  return state && gpuq::is_finished(*state);
}

namespace {

// The length of the UTF-8 sequence at s[i] (2 to 4), or 0 when it is not a well-formed one
// (overlong forms, surrogates and code points past U+10FFFF are not).
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const auto cont = [&](std::size_t k) { return i + k < s.size() && (b(k) & 0xC0) == 0x80; };
  const unsigned char c = b(0);
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
    if (c == 0xED && b(1) >= 0xA0) return 0;  // surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && b(1) >= 0x90) return 0;  // past U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

std::string escaped(std::string_view s) {
  static const char* kHex = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if (c < 0x80) {
      switch (c) {
        case '\n': out += "\\n"; break;
        case '\t': out += "\\t"; break;
        case '\r': out += "\\r"; break;
        default: out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      }
      ++i;
      continue;
    }
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
      ++i;
    } else if (n == 2 && c == 0xC2 && static_cast<unsigned char>(s[i + 1]) < 0xA0) {
      const auto cp = static_cast<unsigned char>(s[i + 1]);  // U+0080..U+009F
      out += {'\\', 'u', '0', '0', kHex[cp >> 4], kHex[cp & 15]};
      i += 2;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string truncate(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  if (width == 0) return "";
  return s.substr(0, width - 1) + "~";
}

std::string Table::render(std::size_t max_width, std::vector<std::size_t> shrinkable) const {
  const std::size_t n = header_.size();
  // Every cell is shown escaped (names, reasons and labels come from users).
  std::vector<std::vector<std::string>> rows;
  rows.reserve(rows_.size());
  for (const auto& row : rows_) {
    std::vector<std::string> shown;
    shown.reserve(row.size());
    for (const auto& cell : row) shown.push_back(escaped(cell));
    rows.push_back(std::move(shown));
  }
  std::vector<std::size_t> w(n, 0);
  for (std::size_t c = 0; c < n; ++c) w[c] = header_[c].size();
  for (const auto& row : rows)
    for (std::size_t c = 0; c < n && c < row.size(); ++c) w[c] = std::max(w[c], row[c].size());
  auto total = [&] {
    std::size_t t = 2 * (n - 1);
    for (auto x : w) t += x;
    return t;
  };
  // Take one character at a time from the widest shrinkable column, so a long id and a long
  // reason both stay readable.
  while (max_width > 0 && total() > max_width) {
    std::size_t best = n;
    for (std::size_t c : shrinkable) {
      const std::size_t floor = std::max<std::size_t>(header_[c].size(), 6);
      if (c < n && w[c] > floor && (best == n || w[c] > w[best])) best = c;
    }
    if (best == n) break;  // the rest is cut at max_width below
    --w[best];
  }
  std::ostringstream out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t c = 0; c < n; ++c) {
      std::string cell = truncate(c < cells.size() ? cells[c] : "", w[c]);
      if (c + 1 < n) cell.resize(w[c], ' ');
      l += cell;
      if (c + 1 < n) l += "  ";
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    if (max_width > 0) l = truncate(l, max_width);
    out << l << '\n';
  };
  line(header_);
  for (const auto& row : rows) line(row);
  return out.str();
}

namespace {

std::int64_t milli_of(const google::protobuf::Map<std::string, std::string>& res, const char* key) {
  auto it = res.find(key);
  if (it == res.end()) return 0;
  auto q = parse_quantity(it->second, UnitScale::kMilli);
  return q ? *q : 0;
}

std::int64_t job_gpu_milli(const v1::Job& j) {
  std::int64_t total = 0;
  for (const auto& ps : j.spec().pod_sets())
    total += milli_of(ps.resources(), "gpu") * std::max(1, ps.count());
  return total;
}

int job_pods(const v1::Job& j) {
  int n = 0;
  for (const auto& ps : j.spec().pod_sets()) n += std::max(1, ps.count());
  return n;
}

std::string or_dash(const std::string& s) { return s.empty() ? "-" : s; }

// A pod set's node constraints as `gpuq show` prints them, one line each under the pod set,
// values from column 20; nothing when it has none.
std::string constraint_lines(const v1::PodSet& ps) {
  std::string out;
  auto line = [&](const char* label, const std::vector<std::string>& items) {
    std::string l = std::string("    ") + label;
    l.resize(19, ' ');
    for (std::size_t i = 0; i < items.size(); ++i) l += (i ? " " : "") + items[i];
    out += escaped(l) + "\n";
  };
  if (!ps.node_selector().empty()) {
    const std::map<std::string, std::string> sel(ps.node_selector().begin(),
                                                 ps.node_selector().end());
    std::vector<std::string> pairs;
    for (const auto& [k, v] : sel) pairs.push_back(k + "=" + v);
    line("node selector:", pairs);
  }
  for (int i = 0; i < ps.affinity_size(); ++i) {
    std::vector<std::string> words;
    for (const auto& e : ps.affinity(i).match_expressions()) {
      if (!words.empty()) words.push_back("and");
      std::string values;
      for (const auto& v : e.values()) values += (values.empty() ? "" : ",") + v;
      words.push_back(e.key() + " " + e.operator_() + (values.empty() ? "" : " [" + values + "]"));
    }
    if (words.empty()) words.push_back("(no requirement: no node)");
    line(i == 0 ? "affinity:" : "  or:", words);
  }
  if (!ps.tolerations().empty()) {
    std::vector<std::string> ts;
    for (const auto& t : ps.tolerations())
      ts.push_back((t.key().empty() ? std::string("*") : t.key()) +
                   (t.operator_() == "Exists" ? "" : "=" + t.value()) + ":" +
                   (t.effect().empty() ? std::string("*") : t.effect()));
    line("tolerates:", ts);
  }
  return out;
}

std::string job_nodes(const v1::Job& j) {
  std::vector<std::string> nodes;
  for (const auto& p : j.placement())
    if (!p.node().empty() && std::find(nodes.begin(), nodes.end(), p.node()) == nodes.end())
      nodes.push_back(p.node());
  std::string s;
  for (const auto& n : nodes) s += (s.empty() ? "" : ",") + n;
  return or_dash(s);
}

}  // namespace

std::string start_text(const v1::Job& j, std::int64_t now) {
  if (j.state() != v1::JOB_STATE_PENDING || j.estimate_computed_at() == 0) return "-";
  if (j.estimated_start() == 0) return "?";
  if (j.estimated_start() <= now) return "now";
  return "in " + human_age(j.estimated_start() - now);
}

std::string jobs_table(const std::vector<v1::Job>& jobs, bool wide, std::int64_t now, bool with_start) {
  // The START column goes after STATE when asked for.
  const auto with = [&](std::vector<std::string> row, std::size_t state_at, const v1::Job* j) {
    if (with_start) row.insert(row.begin() + static_cast<std::ptrdiff_t>(state_at) + 1, j ? start_text(*j, now) : "START");
    return row;
  };
  if (wide) {
    Table t(with({"ID", "NAME", "QUEUE", "OWNER", "STATE", "PRIO", "GPU", "GPU-UTIL", "PODS", "FLAVOR", "NODES", "AGE",
                  "REASON"},
                 4, nullptr));
    for (const auto& j : jobs)
      t.add(with({j.spec().id(), or_dash(j.spec().name()), j.spec().queue(), or_dash(j.spec().owner()), job_state(j),
                  std::to_string(j.priority()), human_milli(job_gpu_milli(j)),
                  percent_text(j.has_gpu_util_percent() ? std::optional(j.gpu_util_percent()) : std::nullopt),
                  std::to_string(job_pods(j)), or_dash(j.flavor()), job_nodes(j), human_age(now - j.submitted_at()),
                  or_dash(j.reason())},
                 4, &j));
    return t.render(0);
  }
  Table t(with({"ID", "QUEUE", "STATE", "GPU", "PODS", "AGE", "REASON"}, 2, nullptr));
  for (const auto& j : jobs)
    t.add(with({j.spec().id(), j.spec().queue(), job_state(j), human_milli(job_gpu_milli(j)),
                std::to_string(job_pods(j)), human_age(now - j.submitted_at()), or_dash(j.reason())},
               2, &j));
  return t.render(80, {with_start ? std::size_t{7} : std::size_t{6}, 0, 1});
}

std::string format_time(std::int64_t t) {
  if (t == 0) return "-";
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string job_detail(const v1::Job& j, std::int64_t now) {
  std::ostringstream o;
  const auto& s = j.spec();
  o << "ID:          " << s.id() << "\n"
    << "Name:        " << escaped(or_dash(s.name())) << "\n"
    << "Queue:       " << s.queue() << "\n"
    << "Owner:       " << escaped(or_dash(s.owner())) << "\n"
    << "State:       " << job_state(j) << "\n"
    << "Reason:      " << escaped(or_dash(j.reason())) << "\n"
    << (j.state() == v1::JOB_STATE_PENDING && j.estimate_computed_at() > 0
            ? "Est. start:  " + (j.estimated_start() == 0 ? std::string("none within 30 days as things stand")
                                                          : format_time(j.estimated_start()) + " (" +
                                                                start_text(j, now) + ")") +
                  ", computed " + format_time(j.estimate_computed_at()) + "\n"
            : std::string())
    << "Priority:    " << j.priority() << (s.priority().empty() ? "" : " (" + escaped(s.priority()) + ")")
    << "\n"
    << "Submitted:   " << format_time(j.submitted_at()) << " (" << human_age(now - j.submitted_at())
    << " ago)\n"
    << "Admitted:    " << format_time(j.admitted_at()) << "\n"
    << "Finished:    " << format_time(j.finished_at()) << "\n"
    << "Flavor:      " << or_dash(j.flavor()) << "\n"
    << "GPU use:     " << gpu_use_text(j, now) << "\n"
    << process_use_text(j)
    << "Attempts:    " << j.attempts() << "  Preemptions: " << j.preemptions()
    << (j.preempted_by().empty() ? "" : "  (last by " + escaped(j.preempted_by()) + ")") << "\n";
  if (is_finished(j.state())) o << "Exit code:   " << j.exit_code() << "\n";
  o << batch_detail(j) << "Pods:\n";
  for (const auto& ps : s.pod_sets()) {
    std::map<std::string, std::string> res(ps.resources().begin(), ps.resources().end());
    o << "  " << or_dash(ps.name()) << " x" << std::max(1, ps.count()) << ":";
    for (const auto& [k, v] : res) o << " " << k << "=" << v;
    o << "\n" << constraint_lines(ps);
  }
  if (!j.placement().empty()) {
    o << "Placement:\n";
    for (const auto& p : j.placement()) {
      o << "  " << or_dash(p.pod_set()) << " on " << or_dash(p.node()) << " gpus [";
      for (int i = 0; i < p.gpus_size(); ++i) o << (i ? "," : "") << p.gpus(i);
      o << "]";
      if (p.gpu_milli() > 0 && p.gpu_milli() < 1000) o << " (" << p.gpu_milli() << "m each)";
      if (!p.pod().empty()) o << " pod " << escaped(p.pod());
      o << "\n";
    }
  }
  if (!s.image().empty()) o << "Image:       " << escaped(s.image()) << "\n";
  const std::vector<std::string> command(s.command().begin(), s.command().end());
  if (const auto script = script_of(command)) {  // a batch script's content, as submitted
    o << "Script:      " << escaped(script->name);
    for (const auto& a : script->args) o << " " << escaped(a);
    o << "\n";
    std::istringstream lines(script->text);
    for (std::string l; std::getline(lines, l);) o << "  | " << escaped(l) << "\n";
  } else if (!command.empty()) {
    o << "Command:    ";
    for (const auto& c : command) o << " " << escaped(c);
    o << "\n";
  }
  return o.str();
}

std::string queues_table(const v1::ListQueuesResponse& r, bool wide) {
  std::vector<std::string> header = {"NAME",  "COHORT",  "GPU NOMINAL/USED/BORROWED",
                                     "SHARE", "PENDING", "RUNNING"};
  if (wide)
    for (const char* h : {"ADMITTED", "PREEMPTING", "WEIGHT", "STRATEGY"}) header.push_back(h);
  Table t(header);
  for (const auto& q : r.queues()) {
    std::int64_t nominal = 0, used = 0, borrowed = 0;
    for (const auto& u : q.usage())
      if (u.resource() == "gpu") {
        nominal += u.nominal();
        used += u.used();
        borrowed += u.borrowed();
      }
    char share[32];
    std::snprintf(share, sizeof share, "%.2f", q.share());
    std::vector<std::string> row = {
        q.spec().name(),
        or_dash(q.spec().cohort()),
        human_milli(nominal) + "/" + human_milli(used) + "/" + human_milli(borrowed),
        share,
        std::to_string(q.pending()),
        std::to_string(q.running())};
    if (wide) {
      char weight[32];
      std::snprintf(weight, sizeof weight, "%g", q.spec().has_weight() ? q.spec().weight() : 1.0);
      row.push_back(std::to_string(q.admitted()));
      row.push_back(std::to_string(q.preempting()));
      row.push_back(weight);
      row.push_back(q.spec().queueing_strategy().empty() ? "BestEffortFIFO"
                                                         : q.spec().queueing_strategy());
    }
    t.add(row);
  }
  return wide ? t.render(0) : t.render(80, {0, 1, 2});
}

namespace {

// A resource's amount in its base units (gpu and cpu in thousandths, memory in bytes) as people say it.
std::string resource_amount(const std::string& resource, std::int64_t base) {
  if (resource == "memory") return human_bytes(base);
  if (resource == "gpu" || resource == "cpu") return human_milli(base);
  return std::to_string(base);
}

std::string seconds_text(std::int64_t s) {
  return std::to_string(s) + "s" + (s >= 120 ? " (" + human_age(s) + ")" : "");
}

std::string members_text(const v1::Members& m) {
  std::string out;
  const auto list = [&](const char* what, const auto& names) {
    if (names.empty()) return;
    out += std::string(out.empty() ? "" : "; ") + what;
    for (int i = 0; i < names.size(); ++i) out += (i ? ", " : " ") + escaped(names[i]);
  };
  list("users", m.users());
  list("groups", m.groups());
  return out;
}

}  // namespace

std::string queue_detail(const v1::QueueStatus& q) {
  const auto& s = q.spec();
  std::ostringstream o;
  char share[32];
  std::snprintf(share, sizeof share, "%.4g", q.share());
  o << "Name:        " << escaped(s.name()) << "\n"
    << "Cohort:      " << escaped(or_dash(s.cohort())) << "\n"
    << "Weight:      " << (s.has_weight() ? s.weight() : 1.0) << "  Share: " << share << "\n"
    << "Strategy:    " << (s.queueing_strategy().empty() ? "BestEffortFIFO" : s.queueing_strategy()) << "\n"
    << "Jobs:        " << q.pending() << " pending, " << q.admitted() << " admitted, " << q.running()
    << " running, " << q.preempting() << " preempting\n";
  o << "Quota:\n";
  if (q.usage().empty()) o << "  (none: it borrows whatever its cohort lends)\n";
  for (const auto& u : q.usage())
    o << "  " << escaped(u.flavor()) << " " << escaped(u.resource()) << ": nominal "
      << resource_amount(u.resource(), u.nominal()) << ", used " << resource_amount(u.resource(), u.used())
      << ", borrowed " << resource_amount(u.resource(), u.borrowed()) << "\n";
  std::vector<std::string> limits;
  const auto count = [&](const char* key, std::int64_t v) {
    if (v > 0) limits.push_back(std::string(key) + " " + std::to_string(v));
  };
  count("maxPendingJobs", s.max_pending_jobs());
  if (!s.max_gpus_per_job().empty()) limits.push_back("maxGpusPerJob " + s.max_gpus_per_job());
  count("maxPodsPerJob", s.max_pods_per_job());
  count("maxRetries", s.max_retries());
  if (s.has_max_runtime_seconds()) limits.push_back("maxRuntime " + seconds_text(s.max_runtime_seconds()));
  if (s.has_default_max_runtime_seconds())
    limits.push_back("defaultMaxRuntime " + seconds_text(s.default_max_runtime_seconds()));
  if (s.has_max_grace_period_seconds())
    limits.push_back("maxGracePeriod " + seconds_text(s.max_grace_period_seconds()));
  if (s.has_runtime_estimate_seconds())
    limits.push_back("runtimeEstimate " + seconds_text(s.runtime_estimate_seconds()));
  if (s.has_idle_warn_after_seconds()) limits.push_back("idle.warnAfter " + seconds_text(s.idle_warn_after_seconds()));
  if (s.has_idle_cancel_after_seconds())
    limits.push_back("idle.cancelAfter " + seconds_text(s.idle_cancel_after_seconds()));
  if (!s.allowed_priority_classes().empty()) {
    std::string classes;
    for (const auto& c : s.allowed_priority_classes()) classes += (classes.empty() ? "" : ",") + escaped(c);
    limits.push_back("allowedPriorityClasses " + classes);
  }
  count("maxRunningJobsPerUser", s.max_running_jobs_per_user());
  count("maxPendingJobsPerUser", s.max_pending_jobs_per_user());
  count("maxSubmitsPerUserPerMinute", s.max_submits_per_user_per_minute());
  o << "Limits:     ";
  if (limits.empty()) o << " (none)";
  for (std::size_t i = 0; i < limits.size(); ++i) o << (i ? "\n             " : " ") << limits[i];
  o << "\n"
    << "Non-preemptible jobs borrow: " << (s.non_preemptible_may_borrow() ? "yes" : "no") << "\n"
    << "Submitters:  "
    << (!s.has_submitters() ? "everyone"
        : members_text(s.submitters()).empty() ? "gpuqd's admins only"
                                              : members_text(s.submitters()))
    << "\n"
    << "Viewers:     " << (members_text(s.viewers()).empty() ? "(none: each user sees their own jobs)"
                                                           : members_text(s.viewers()))
    << "\n";
  if (s.has_kubernetes()) {  // binder kubernetes: in the YAML keys' spelling, as the limits
    const v1::QueueKubernetes& k = s.kubernetes();
    o << "Kubernetes:  namespace " << escaped(or_dash(k.namespace_())) << "\n";
    if (!k.default_image().empty()) o << "             defaultImage " << escaped(k.default_image()) << "\n";
    if (!k.allowed_images().empty()) {
      std::string images;
      for (const auto& i : k.allowed_images()) images += (images.empty() ? "" : ", ") + escaped(i);
      o << "             allowedImages " << images << "\n";
    }
    if (!k.pod_template_json().empty())  // whole with -o json or -o yaml
      o << "             podTemplate " << escaped(truncate(k.pod_template_json(), 40)) << " ("
        << k.pod_template_json().size() << " bytes)\n";
  }
  return o.str();
}

namespace {
std::int64_t at(const google::protobuf::Map<std::string, std::int64_t>& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? 0 : it->second;
}
}  // namespace

std::string nodes_table(const v1::ListNodesResponse& r, bool wide) {
  std::vector<std::string> header = {"NAME",     "FLAVOR",      "STATE", "GPU FREE",
                                     "CPU USED", "MEMORY USED", "PODS"};
  if (wide) {
    header.push_back("DEDICATED");
    header.push_back("LABELS");
  }
  Table t(header);
  for (const auto& n : r.nodes()) {
    std::vector<std::string> row = {
        n.spec().name(),
        n.spec().flavor(),
        n.spec().state().empty() ? "Ready" : n.spec().state(),
        std::to_string(n.gpus_free()) + "/" + std::to_string(n.gpus()),
        human_milli(at(n.used(), "cpu")) + "/" + human_milli(at(n.capacity(), "cpu")),
        human_bytes(at(n.used(), "memory")) + "/" + human_bytes(at(n.capacity(), "memory")),
        std::to_string(n.pods())};
    if (wide) {
      row.push_back(or_dash(n.spec().dedicated_to()));
      std::map<std::string, std::string> labels(n.spec().labels().begin(), n.spec().labels().end());
      std::string l;
      for (const auto& [k, v] : labels) l += (l.empty() ? "" : ",") + k + "=" + v;
      row.push_back(or_dash(l));
    }
    t.add(row);
  }
  std::string out = wide ? t.render(0) : t.render(80, {0, 1, 5, 4});
  // The local executor's node without cgroups (label gpuq.io/cgroups=none): a job there can use
  // more than it was given; said under the table, in every format a person reads.
  for (const auto& n : r.nodes())
    if (auto it = n.spec().labels().find(kCgroupsLabel); it != n.spec().labels().end() && it->second == "none")
      out += "warning: node " + escaped(n.spec().name()) +
             " has no cgroups: its jobs are not held to their GPUs, CPU or memory (gpuqd's log says why)\n";
  return out;
}

std::string event_line(const v1::JobEvent& e) {
  std::string from = e.from() == v1::JOB_STATE_UNSPECIFIED ? "submitted" : state_name(e.from());
  std::string l = std::to_string(e.seq()) + " " + format_time(e.at()) + " job/" + e.job_id() +
                  " queue/" + e.queue() + " " + from + " -> " + state_name(e.to());
  if (!e.reason().empty()) l += ": " + e.reason();
  return escaped(l);
}

std::string job_state(const v1::Job& j) {
  return j.stopping() ? "Stopping" : j.held() ? "Held" : state_name(j.state());
}

}  // namespace gpuq::cli
