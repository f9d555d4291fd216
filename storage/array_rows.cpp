#include "storage/array_rows.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <charconv>
#include <map>

#include "storage/codec.hpp"
#include "storage/job_rows.hpp"

namespace gpuq::storage {
namespace json = boost::json;

std::string ArrayRows::member_id(std::uint64_t p) const {
  return first.spec.array_id + "_" + std::to_string(indices.at(p));
}

JobRecord ArrayRows::member(std::uint64_t p) const {
  JobRecord m = first;
  m.spec.array_index = static_cast<std::int32_t>(indices.at(p));
  m.spec.id = JobId(first.spec.array_id + "_" + std::to_string(m.spec.array_index));
  m.number = first.number + p;
  return m;
}

EventRecord ArrayRows::event(std::uint64_t p, std::size_t t) const {
  EventRecord e = each[t];
  e.seq = first_seq + p * each.size() + t;
  e.job = member_id(p);
  return e;
}

IndexRanges IndexRanges::of(const std::vector<std::int32_t>& ascending) {
  IndexRanges r;
  for (std::int32_t v : ascending) {
    const auto u = static_cast<std::uint64_t>(v);
    if (!r.ranges_.empty() && r.ranges_.back().second + 1 == u)
      r.ranges_.back().second = u;
    else
      r.ranges_.emplace_back(u, u);
  }
  r.recount(0);
  return r;
}

IndexRanges IndexRanges::span(std::uint64_t n) {
  IndexRanges r;
  if (n > 0) r.ranges_.emplace_back(0, n - 1);
  r.recount(0);
  return r;
}

std::optional<IndexRanges> IndexRanges::parse(std::string_view text) {
  IndexRanges r;
  const auto number = [&](std::uint64_t& v) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end == text.data()) return false;
    text.remove_prefix(static_cast<std::size_t>(end - text.data()));
    return true;
  };
  while (!text.empty()) {
    std::uint64_t lo = 0, hi = 0;
    if (!number(lo)) return std::nullopt;
    hi = lo;
    if (!text.empty() && text.front() == '-') {
      text.remove_prefix(1);
      if (!number(hi) || hi < lo) return std::nullopt;
    }
    if (!r.ranges_.empty() && lo <= r.ranges_.back().second) return std::nullopt;
    if (!r.ranges_.empty() && lo == r.ranges_.back().second + 1)
      r.ranges_.back().second = hi;
    else
      r.ranges_.emplace_back(lo, hi);
    if (!text.empty()) {
      if (text.front() != ',' || text.size() == 1) return std::nullopt;
      text.remove_prefix(1);
    }
  }
  r.recount(0);
  return r;
}

std::string IndexRanges::text() const {
  std::string out;
  for (const auto& [lo, hi] : ranges_) {
    if (!out.empty()) out += ',';
    out += std::to_string(lo);
    if (hi != lo) out += '-' + std::to_string(hi);
  }
  return out;
}

void IndexRanges::recount(std::size_t from) {
  before_.resize(ranges_.size());
  for (std::size_t i = from; i < ranges_.size(); ++i) before_[i] = i == 0 ? 0 : before_[i - 1] + width(i - 1);
}

std::optional<std::uint64_t> IndexRanges::rank(std::uint64_t v) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), v,
                             [](std::uint64_t x, const auto& r) { return x < r.first; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (v > it->second) return std::nullopt;
  return before_[static_cast<std::size_t>(it - ranges_.begin())] + (v - it->first);
}

std::uint64_t IndexRanges::at(std::uint64_t p) const {
  auto it = std::upper_bound(before_.begin(), before_.end(), p);
  const auto i = static_cast<std::size_t>(it - before_.begin()) - 1;
  return ranges_[i].first + (p - before_[i]);
}

IndexRanges IndexRanges::slice(std::uint64_t first, std::uint64_t last) const {
  IndexRanges out;
  for (std::size_t i = 0; i < ranges_.size(); ++i) {
    const std::uint64_t b = before_[i], w = width(i);
    if (b > last) break;
    if (b + w <= first) continue;
    const std::uint64_t from = first > b ? first - b : 0, to = std::min(w - 1, last - b);
    out.ranges_.emplace_back(ranges_[i].first + from, ranges_[i].first + to);
  }
  out.recount(0);
  return out;
}

bool IndexRanges::erase(std::uint64_t v) {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), v,
                             [](std::uint64_t x, const auto& r) { return x < r.first; });
  if (it == ranges_.begin()) return false;
  --it;
  if (v > it->second) return false;
  const auto i = static_cast<std::size_t>(it - ranges_.begin());
  if (it->first == it->second) {
    ranges_.erase(it);
  } else if (v == it->first) {
    ++it->first;
  } else if (v == it->second) {
    --it->second;
  } else {
    const std::uint64_t hi = it->second;
    it->second = v - 1;
    ranges_.insert(ranges_.begin() + static_cast<std::ptrdiff_t>(i) + 1, {v + 1, hi});
  }
  recount(i);
  return true;
}

void for_each_event(const Batch& batch, const std::function<void(const EventRecord&)>& f) {
  // Each array's events are one run of seqs, and the batch's own events are in seq order.
  std::vector<const ArrayRows*> arrays;
  for (const ArrayRows& a : batch.arrays) arrays.push_back(&a);
  std::sort(arrays.begin(), arrays.end(), [](const auto* x, const auto* y) { return x->first_seq < y->first_seq; });
  auto next = arrays.begin();
  auto runs_before = [&](std::uint64_t seq) {
    for (; next != arrays.end() && (*next)->first_seq < seq; ++next)
      for (std::uint64_t p = 0; p < (*next)->count(); ++p)
        for (std::size_t t = 0; t < (*next)->each.size(); ++t) f((*next)->event(p, t));
  };
  for (const EventRecord& e : batch.events) {
    runs_before(e.seq);
    f(e);
  }
  runs_before(UINT64_MAX);
}

std::size_t jobs_in(const Batch& batch) { return batch.jobs.size() + batch.arrays.size(); }

void bind_job(Stmt& s, const JobRecord& j, const std::string& body) {
  s.bind(1, static_cast<std::int64_t>(j.number));
  s.bind(2, j.spec.id.value);
  s.bind(3, j.spec.queue.value);
  s.bind(4, j.spec.owner);
  s.bind(5, j.spec.name);
  s.bind(6, std::int64_t{state_code(j.state)});
  s.bind(7, std::int64_t{j.spec.priority});
  s.bind(8, j.priority_text);
  s.bind(9, j.spec.submitted_at);
  s.bind(10, j.admitted_at);
  s.bind(11, j.finished_at);
  s.bind(12, j.flavor);
  s.bind(13, job_gpu_milli(j.spec));
  s.bind(14, std::int64_t{j.attempts});
  s.bind(15, std::int64_t{j.preemptions});
  s.bind(16, std::int64_t{j.exit_code});
  s.bind(17, j.preempted_by);
  s.bind(18, j.reason);
  s.bind(19, body);
  s.bind(20, j.gpu_use.samples);
  s.bind(21, j.gpu_use.util_sum);
  s.bind(22, j.gpu_use.memory_peak_mib);
}

void bind_event(Stmt& s, const EventRecord& e) {
  s.bind(1, static_cast<std::int64_t>(e.seq));
  s.bind(2, e.at);
  s.bind(3, e.job);
  s.bind(4, e.queue);
  if (e.from)
    s.bind(5, std::int64_t{state_code(*e.from)});
  else
    s.bind_null(5);
  s.bind(6, std::int64_t{state_code(e.to)});
  s.bind(7, e.reason);
  s.bind(8, e.flavor);
}

std::string array_row_select() {
  return std::string("SELECT ") + kJobColumns + ", indices, first_seq, events, unsplit FROM array_rows";
}

bool write_array_row(Stmt& put, const ArrayRows& a, const IndexRanges& unsplit, const ResourceNames& names) {
  json::array events;
  for (const EventRecord& e : a.each) {
    json::object o;
    o["at"] = e.at;
    if (e.from) o["from"] = state_code(*e.from);
    o["to"] = state_code(e.to);
    o["reason"] = e.reason;
    o["flavor"] = e.flavor;
    events.push_back(std::move(o));
  }
  Stmt::Reset r(put);
  bind_job(put, a.first, encode_job_body(a.first, names));
  put.bind(23, a.indices.text());
  put.bind(24, static_cast<std::int64_t>(a.first_seq));
  put.bind(25, json::serialize(events));
  put.bind(26, a.first.spec.array_id);
  put.bind(27, static_cast<std::int64_t>(a.last_number()));
  put.bind(28, static_cast<std::int64_t>(a.last_seq()));
  put.bind(29, unsplit.text());
  return put.step() == SQLITE_DONE;
}

Result<std::vector<EventRecord>> decode_array_events(std::string_view text, const std::string& what) {
  std::vector<EventRecord> out;
  boost::system::error_code ec;
  json::value events = json::parse(text, ec);
  if (ec || !events.is_array()) return Error{what + ": events: not a JSON array", ErrorCode::kFailedPrecondition};
  for (const json::value& v : events.as_array()) {
    const json::object* o = v.if_object();
    const auto* at = o ? o->if_contains("at") : nullptr;
    const auto* to = o ? o->if_contains("to") : nullptr;
    const auto* reason = o ? o->if_contains("reason") : nullptr;
    const auto* flavor = o ? o->if_contains("flavor") : nullptr;
    const auto* from = o ? o->if_contains("from") : nullptr;
    EventRecord e;
    if (!at || !at->is_int64() || !to || !to->is_int64() || !reason || !reason->is_string() || !flavor ||
        !flavor->is_string() || (from && !from->is_int64()))
      return Error{what + ": events: " + json::serialize(v) + " is not an event", ErrorCode::kFailedPrecondition};
    auto to_state = state_from_code(to->as_int64());
    if (from) e.from = state_from_code(from->as_int64());
    if (!to_state || (from && !e.from))
      return Error{what + ": events: " + json::serialize(v) + " has an unknown state code",
                   ErrorCode::kFailedPrecondition};
    e.at = at->as_int64();
    e.to = *to_state;
    e.reason = reason->as_string();
    e.flavor = flavor->as_string();
    out.push_back(std::move(e));
  }
  return out;
}

namespace {

Result<void> decode_array_tail(const Stmt& s, ArrayRows& a) {
  const std::string what = "array " + a.first.spec.array_id + " (row " + std::to_string(a.first.number) + ")";
  constexpr int kTail = kJobIntColumns + kJobTextColumns;
  const std::string_view indices = s.text(kTail);
  auto parsed = IndexRanges::parse(indices);
  if (!parsed || parsed->empty())
    return Error{what + ": indices: \"" + std::string(indices.substr(0, 32)) + "\" is not a list of ascending indices",
                 ErrorCode::kFailedPrecondition};
  a.indices = std::move(*parsed);
  a.first_seq = static_cast<std::uint64_t>(s.int64(kTail + 1));
  const std::string_view unsplit = s.is_null(kTail + 3) ? std::string_view() : s.text(kTail + 3);
  auto positions = IndexRanges::parse(unsplit);
  if (!positions || (!positions->empty() && positions->ranges().back().second >= a.count()))
    return Error{what + ": unsplit: \"" + std::string(unsplit.substr(0, 32)) + "\" is not a list of its positions",
                 ErrorCode::kFailedPrecondition};
  a.unsplit = std::move(*positions);
  auto each = decode_array_events(s.text(kTail + 2), what);
  if (!each) return Error{each.error(), each.code()};
  a.each = std::move(each).value();
  for (EventRecord& e : a.each) {
    e.queue = a.first.spec.queue.value;
    e.owner = a.first.spec.owner;
  }
  return Ok();
}

}  // namespace

Result<void> read_array_row(const Stmt& s, ArrayRows& a, ResourceInterner& names) {
  a = ArrayRows();
  if (auto r = decode_job(RowView::of(s), a.first, names); !r) return r;
  return decode_array_tail(s, a);
}

Result<bool> ArrayRowCursor::next_row() {
  if (done_) return false;
  const int rc = s_.step();
  if (rc == SQLITE_ROW) {
    if (auto r = read_array_row(s_, row_, names_); !r) return Error{r.error(), r.code()};
    return loaded_ = true;
  }
  done_ = true;
  if (rc != SQLITE_DONE) return Error{"reading array_rows", ErrorCode::kUnavailable};
  return false;
}

Result<std::optional<std::uint64_t>> MemberCursor::peek() {
  while (true) {
    if (!loaded_) {
      auto more = next_row();
      if (!more) return Error{more.error(), more.code()};
      if (!*more) return std::optional<std::uint64_t>();
      range_ = 0;
      p_ = after_ >= row_.first.number ? after_ - row_.first.number + 1 : 0;
    }
    const auto& r = row_.unsplit.ranges();
    while (range_ < r.size() && r[range_].second < p_) ++range_;
    if (range_ == r.size()) {
      loaded_ = false;
      continue;
    }
    p_ = std::max(p_, r[range_].first);
    return std::optional<std::uint64_t>(row_.first.number + p_);
  }
}

JobRecord MemberCursor::take() { return row_.member(p_++); }

ListEntry MemberCursor::take_run() {
  const std::uint64_t last = row_.unsplit.ranges()[range_].second;
  ListEntry e{row_.member(p_), {}, row_.first.number + last};
  if (last > p_) e.members = row_.indices.slice(p_, last);
  p_ = last + 1;
  return e;
}

Result<std::optional<std::uint64_t>> EventRunCursor::peek() {
  while (true) {
    if (!loaded_) {
      auto more = next_row();
      if (!more) return Error{more.error(), more.code()};
      if (!*more) return std::optional<std::uint64_t>();
      next_ = std::max(row_.first_seq, after_ + 1);
    }
    if (row_.each.empty() || next_ > row_.last_seq()) {
      loaded_ = false;
      continue;
    }
    return std::optional<std::uint64_t>(next_);
  }
}

EventRecord EventRunCursor::take() {
  const std::uint64_t k = row_.each.size(), i = next_++ - row_.first_seq;
  return row_.event(i / k, static_cast<std::size_t>(i % k));
}

Result<std::vector<ListEntry>> merge_members(std::vector<JobRecord> rows, MemberCursor& members, std::size_t limit,
                                             bool fold) {
  std::vector<ListEntry> out;
  out.reserve(std::min<std::size_t>(limit, 1000));
  std::size_t i = 0;
  while (out.size() < limit) {
    auto m = members.peek();
    if (!m) return Error{m.error(), m.code()};
    if (i < rows.size() && (!*m || rows[i].number < **m)) {
      const std::uint64_t number = rows[i].number;
      out.push_back(ListEntry{std::move(rows[i++]), {}, number});
    } else if (*m && fold) {
      out.push_back(members.take_run());
    } else if (*m) {
      JobRecord j = members.take();
      const std::uint64_t number = j.number;
      out.push_back(ListEntry{std::move(j), {}, number});
    } else {
      break;
    }
  }
  return out;
}

Result<std::vector<EventRecord>> merge_events(std::vector<EventRecord> rows, EventRunCursor& runs, std::size_t limit) {
  std::vector<EventRecord> out;
  std::size_t i = 0;
  while (out.size() < limit) {
    auto next = runs.peek();
    if (!next) return Error{next.error(), next.code()};
    if (i < rows.size() && (!*next || rows[i].seq < **next))
      out.push_back(std::move(rows[i++]));
    else if (*next)
      out.push_back(runs.take());
    else
      break;
  }
  return out;
}

Result<void> write_batch_arrays(const Batch& batch, const ArrayWrites& st, const ResourceNames& names,
                                const std::function<Error(const std::string&)>& failed, const std::string& path) {
  struct Row {
    std::uint64_t last_number;
    IndexRanges unsplit;
    const ArrayRows* added;  // from this batch (written here), or nullptr (updated if changed)
    bool changed;
  };
  std::map<std::uint64_t, Row> rows;  // by number
  for (const ArrayRows& a : batch.arrays) {
    if (a.indices.empty() || a.first.number == 0 || a.first.spec.array_id.empty() || a.each.empty())
      return Error{"commit: array " + a.first.spec.array_id + " has no members, number, id or events; nothing was written",
                   ErrorCode::kInvalidArgument};
    if (auto u = unknown_resource(a.first.spec, names))
      return Error{"commit: array " + a.first.spec.array_id + " uses " + *u + ", which has no name in this process's "
                   "ResourceNames; nothing was written", ErrorCode::kInvalidArgument};
    rows[a.first.number] = Row{a.last_number(), IndexRanges::span(a.count()), &a, false};
  }
  // A job row for a member still in its array's row splits it off: the job row is the member now.
  for (const auto& j : batch.jobs) {
    auto it = rows.upper_bound(j.number);
    if (it == rows.begin() || std::prev(it)->second.last_number < j.number) {
      Stmt::Reset r(st.at);
      st.at.bind(1, static_cast<std::int64_t>(j.number));
      const int rc = st.at.step();
      if (rc == SQLITE_DONE) continue;
      if (rc != SQLITE_ROW) return failed("reading array_rows");
      const auto number = static_cast<std::uint64_t>(st.at.int64(0));
      const auto last = static_cast<std::uint64_t>(st.at.int64(1));
      if (last < j.number) continue;
      auto unsplit = IndexRanges::parse(st.at.text(2));
      if (!unsplit)
        return Error{"state file " + path + ": array row " + std::to_string(number) + ": unsplit: \"" +
                         std::string(st.at.text(2).substr(0, 32)) + "\" is not a list of positions",
                     ErrorCode::kFailedPrecondition};
      it = rows.emplace(number, Row{last, std::move(*unsplit), nullptr, false}).first;
      ++it;
    }
    Row& row = std::prev(it)->second;
    if (row.unsplit.erase(j.number - std::prev(it)->first)) row.changed = true;
  }
  for (const auto& [number, row] : rows) {
    if (row.added) {
      if (!write_array_row(st.put, *row.added, row.unsplit, names))
        return failed("writing array " + row.added->first.spec.array_id);
    } else if (row.changed) {
      Stmt::Reset r(st.set_unsplit);
      st.set_unsplit.bind(1, static_cast<std::int64_t>(number));
      st.set_unsplit.bind(2, row.unsplit.text());
      if (st.set_unsplit.step() != SQLITE_DONE) return failed("writing array row " + std::to_string(number));
    }
  }
  return Ok();
}

Result<std::optional<JobRecord>> find_member(Stmt& s, bool whole, const std::string& id, ResourceInterner& names) {
  // "<array>_<index>", the index as std::to_string writes it.
  const auto cut = id.rfind('_');
  if (cut == std::string::npos || cut == 0 || cut + 1 == id.size() || id.size() - cut > 11 ||
      (id[cut + 1] == '0' && id.size() - cut > 2) ||
      !std::all_of(id.begin() + static_cast<std::ptrdiff_t>(cut) + 1, id.end(), [](char c) { return c >= '0' && c <= '9'; }))
    return std::optional<JobRecord>();
  const std::uint64_t index = std::stoull(id.substr(cut + 1));
  Stmt::Reset r(s);
  s.bind(1, id.substr(0, cut));
  int rc;
  while ((rc = s.step()) == SQLITE_ROW) {
    if (whole) {
      ArrayRows a;
      if (auto d = read_array_row(s, a, names); !d) return Error{d.error(), d.code()};
      if (auto p = a.indices.rank(index); p && a.unsplit.contains(*p)) return std::optional<JobRecord>(a.member(*p));
      continue;
    }
    auto indices = IndexRanges::parse(s.text(1));
    auto unsplit = IndexRanges::parse(s.text(2));
    if (!indices || !unsplit)
      return Error{"array row " + std::to_string(s.int64(0)) + " does not decode",
                   ErrorCode::kFailedPrecondition};
    if (auto p = indices->rank(index); p && unsplit->contains(*p)) {
      std::optional<JobRecord> m(std::in_place);
      m->number = static_cast<std::uint64_t>(s.int64(0)) + *p;
      return m;
    }
  }
  if (rc != SQLITE_DONE) return Error{"reading array_rows for job " + id, ErrorCode::kUnavailable};
  return std::optional<JobRecord>();
}

RunMerger::RunMerger(const std::vector<ArrayRows>& rows, const Store::JobSink& jobs, const Store::RunSink& runs)
    : jobs_(jobs), runs_(runs) {
  for (const ArrayRows& a : rows) {
    members_ += a.unsplit.size();
    for (const auto& range : a.unsplit.ranges()) pending_.emplace_back(&a, range);
  }
  next_ = pending_.begin();
}

Result<void> RunMerger::emit() {
  const auto& [a, range] = *next_++;
  if (runs_) {
    MemberRun run{a->member(range.first), {}};
    run.indices.reserve(range.second - range.first + 1);
    for (std::uint64_t p = range.first; p <= range.second; ++p)
      run.indices.push_back(static_cast<std::int32_t>(a->indices.at(p)));
    return runs_(run);
  }
  std::vector<JobRecord> chunk;
  for (std::uint64_t p = range.first; p <= range.second; ++p) {
    chunk.push_back(a->member(p));
    if (chunk.size() == 4096 || p == range.second) {
      if (auto r = jobs_(chunk); !r) return r;
      chunk.clear();
    }
  }
  return Ok();
}

Result<void> RunMerger::chunk(std::vector<JobRecord>& chunk) {
  if (chunk.empty() || next_ == pending_.end() || next_number() > chunk.back().number) return jobs_(chunk);
  std::vector<JobRecord> part;
  for (JobRecord& j : chunk) {
    while (next_ != pending_.end() && next_number() < j.number) {
      if (!part.empty())
        if (auto r = jobs_(part); !r) return r;
      part.clear();
      if (auto r = emit(); !r) return r;
    }
    part.push_back(std::move(j));
  }
  return part.empty() ? Result<void>(Ok()) : jobs_(part);
}

Result<void> RunMerger::rest() {
  while (next_ != pending_.end())
    if (auto r = emit(); !r) return r;
  return Ok();
}

Result<std::size_t> upgrade_array_rows(Db& db, ResourceNames& names) {
  const auto failed = [&](const std::string& doing) {
    return Error{doing + ": " + sqlite3_errmsg(db.get()), ErrorCode::kUnavailable};
  };
  Stmt old, split, update;
  const std::string s_old = array_row_select() + " WHERE unsplit IS NULL ORDER BY number";
  if (Stmt::prepare(db, s_old.c_str(), old) ||
      Stmt::prepare(db, "SELECT number FROM jobs WHERE number BETWEEN ?1 AND ?2", split) ||
      Stmt::prepare(db, "UPDATE array_rows SET array_id = ?2, last_number = ?3, last_seq = ?4, unsplit = ?5 "
                        "WHERE number = ?1", update))
    return failed("preparing the upgrade of array_rows");
  std::mutex mu;
  ResourceInterner interner(names, mu);
  std::vector<ArrayRows> rows;
  int rc;
  while ((rc = old.step()) == SQLITE_ROW)
    if (auto r = read_array_row(old, rows.emplace_back(), interner); !r) return Error{r.error(), r.code()};
  if (rc != SQLITE_DONE) return failed("reading array_rows");
  for (ArrayRows& a : rows) {
    IndexRanges unsplit = IndexRanges::span(a.count());
    Stmt::Reset rs(split);
    split.bind(1, static_cast<std::int64_t>(a.first.number));
    split.bind(2, static_cast<std::int64_t>(a.last_number()));
    while ((rc = split.step()) == SQLITE_ROW) unsplit.erase(static_cast<std::uint64_t>(split.int64(0)) - a.first.number);
    if (rc != SQLITE_DONE) return failed("reading jobs");
    Stmt::Reset ru(update);
    update.bind(1, static_cast<std::int64_t>(a.first.number));
    update.bind(2, a.first.spec.array_id);
    update.bind(3, static_cast<std::int64_t>(a.last_number()));
    update.bind(4, static_cast<std::int64_t>(a.last_seq()));
    update.bind(5, unsplit.text());
    if (update.step() != SQLITE_DONE) return failed("upgrading array_rows");
  }
  return rows.size();
}

}  // namespace gpuq::storage
