#include "storage/array_rows.hpp"

#include <boost/json.hpp>
#include <charconv>

#include "storage/codec.hpp"
#include "storage/job_rows.hpp"

namespace gpuq::storage {
namespace json = boost::json;

JobRecord ArrayRows::member(std::size_t p) const {
  JobRecord m = first;
  m.spec.id = JobId(first.spec.array_id + "_" + std::to_string(indices[p]));
  m.spec.array_index = indices[p];
  m.number = first.number + p;
  return m;
}

EventRecord ArrayRows::event(std::size_t p, std::size_t t) const {
  EventRecord e = each[t];
  e.seq = first_seq + p * each.size() + t;
  e.job = first.spec.array_id + "_" + std::to_string(indices[p]);
  return e;
}

void for_each_event(const Batch& batch, const std::function<void(const EventRecord&)>& f) {
  // Each array's events are one run of seqs, and the batch's own events are in seq order.
  std::vector<const ArrayRows*> arrays;
  for (const ArrayRows& a : batch.arrays) arrays.push_back(&a);
  std::sort(arrays.begin(), arrays.end(), [](const auto* x, const auto* y) { return x->first_seq < y->first_seq; });
  auto next = arrays.begin();
  auto runs_before = [&](std::uint64_t seq) {
    for (; next != arrays.end() && (*next)->first_seq < seq; ++next)
      for (std::size_t p = 0; p < (*next)->indices.size(); ++p)
        for (std::size_t t = 0; t < (*next)->each.size(); ++t) f((*next)->event(p, t));
  };
  for (const EventRecord& e : batch.events) {
    runs_before(e.seq);
    f(e);
  }
  runs_before(UINT64_MAX);
}

std::size_t jobs_in(const Batch& batch) {
  std::size_t n = batch.jobs.size();
  for (const ArrayRows& a : batch.arrays) n += a.indices.size();
  return n;
}

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

Result<void> write_array_row(Stmt& put, const ArrayRows& a, const ResourceNames& names) {
  std::string indices;
  for (std::int32_t i : a.indices) {
    if (!indices.empty()) indices += ',';
    indices += std::to_string(i);
  }
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
  put.bind(23, indices);
  put.bind(24, static_cast<std::int64_t>(a.first_seq));
  put.bind(25, json::serialize(events));
  if (put.step() != SQLITE_DONE) return Error{"", ErrorCode::kUnavailable};
  return Ok();
}

namespace {

Result<void> decode_array_tail(const Stmt& s, ArrayRows& a) {
  const std::string what = "array " + a.first.spec.array_id + " (row " + std::to_string(a.first.number) + ")";
  std::string_view text = s.text(kJobIntColumns + kJobTextColumns);
  while (!text.empty()) {
    std::int32_t i = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
    if (ec != std::errc() || (end != text.data() + text.size() && *end != ','))
      return Error{what + ": indices: \"" + std::string(text.substr(0, 32)) + "\" is not a list of integers",
                   ErrorCode::kFailedPrecondition};
    a.indices.push_back(i);
    text.remove_prefix(static_cast<std::size_t>(end - text.data()) + (end == text.data() + text.size() ? 0 : 1));
  }
  a.first_seq = static_cast<std::uint64_t>(s.int64(kJobIntColumns + kJobTextColumns + 1));
  boost::system::error_code ec;
  json::value events = json::parse(s.text(kJobIntColumns + kJobTextColumns + 2), ec);
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
    e.queue = a.first.spec.queue.value;
    e.owner = a.first.spec.owner;
    a.each.push_back(std::move(e));
  }
  return Ok();
}

}  // namespace

Result<std::vector<ArrayRows>> read_array_rows(Stmt& all, ResourceNames& names,
                                               const std::function<Error()>& failed) {
  std::mutex names_mu;
  ResourceInterner interner(names, names_mu);
  std::vector<ArrayRows> out;
  int rc;
  while ((rc = all.step()) == SQLITE_ROW) {
    ArrayRows& a = out.emplace_back();
    if (auto r = decode_job(RowView::of(all), a.first, interner); !r) return Error{r.error(), r.code()};
    if (auto r = decode_array_tail(all, a); !r) return Error{r.error(), r.code()};
  }
  if (rc != SQLITE_DONE) return failed();
  return out;
}

}  // namespace gpuq::storage
