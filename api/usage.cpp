#include "api/usage.hpp"

#include <algorithm>
#include <optional>

#include "api/service_util.hpp"

namespace gpuq::api {

using namespace detail;

namespace {

constexpr double kMilliGpuSecondsPerGpuHour = 1000.0 * 3600;
constexpr std::size_t kDefaultPageSize = 100;
constexpr int kMaxPageSize = 1000;
// A page's token: the last row's key after this prefix (groups: "" is a key too), or the last
// job's submission number (by job).
constexpr std::string_view kKeyToken = "k:";

grpc::Status invalid(const std::string& message) {
  return {grpc::StatusCode::INVALID_ARGUMENT, message};
}

std::optional<storage::UsageBy> grouping(int by) {
  switch (by) {
    case v1::USAGE_BY_UNSPECIFIED:
    case v1::USAGE_BY_QUEUE:
      return storage::UsageBy::kQueue;
    case v1::USAGE_BY_USER:
      return storage::UsageBy::kUser;
    case v1::USAGE_BY_FLAVOR:
      return storage::UsageBy::kFlavor;
    case v1::USAGE_BY_JOB:
      return storage::UsageBy::kJob;
    default:
      return std::nullopt;
  }
}

// The request's period, grouping and page read into a query; an error names the field, the
// value and what is allowed.
grpc::Status read_query(const v1::UsageRequest& req, Time now, storage::UsageQuery& q) {
  const auto by = grouping(req.by());
  if (!by)
    return invalid(
        "by: " + std::to_string(req.by()) +
        " is not a grouping; use USAGE_BY_QUEUE, USAGE_BY_USER, USAGE_BY_FLAVOR or USAGE_BY_JOB");
  q.by = *by;
  for (auto [field, value] : {std::pair{"since", req.since()}, std::pair{"until", req.until()}})
    if (value < 0)
      return invalid(std::string(field) + ": " + std::to_string(value) +
                     " is before 1970; use Unix seconds, 0 for " +
                     (std::string(field) == "since" ? "the beginning" : "now"));
  q.since = req.since();
  // "Now" is the end of the current second (times are whole seconds): what happened in it counts.
  q.until = req.until() == 0 ? now + 1 : req.until();
  if (q.since > q.until)
    return invalid(
        "since: " + std::to_string(q.since) + " is after until: " + std::to_string(q.until) +
        (req.until() == 0 ? " (now)" : "") + "; the period must start at or before its end");
  q.now = now;
  if (req.page_size() < 0 || req.page_size() > kMaxPageSize)
    return invalid("page_size: " + std::to_string(req.page_size()) +
                   " is not allowed; use 0 (100 rows) to " + std::to_string(kMaxPageSize));
  const std::size_t page =
      req.page_size() == 0 ? kDefaultPageSize : static_cast<std::size_t>(req.page_size());
  q.limit = page + 1;  // one more: is there a next page?
  const std::string& token = req.page_token();
  if (!token.empty()) {
    const bool digits =
        std::all_of(token.begin(), token.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (q.by == storage::UsageBy::kJob && digits && token.size() <= 19) {
      q.after_number = std::stoull(token);
    } else if (q.by != storage::UsageBy::kJob && token.starts_with(kKeyToken)) {
      q.after_key = token.substr(kKeyToken.size());
    } else {
      return invalid("page_token: \"" + token +
                     "\" is not a token this server gave for this grouping; "
                     "send the next_page_token of the previous page, with the same by");
    }
  }
  q.queue = req.queue();
  q.user = req.user();
  return grpc::Status::OK;
}

// Totals over every job are queue summaries, open to every caller; rows of users or jobs, or of
// one user, are made of the jobs the caller may list (as Jobs.List: api/access.hpp).
grpc::Status restrict_to_visible(daemon::Loop& loop, const Gate& gate, const Access& access,
                                 storage::UsageQuery& q) {
  if (q.by != storage::UsageBy::kUser && q.by != storage::UsageBy::kJob && q.user.empty())
    return grpc::Status::OK;
  if (auto st = gate.known(access, "see the usage of users or jobs"); !st.ok()) return st;
  std::optional<QueueSpec> queue;
  if (!q.queue.empty() && access.checked && !access.admin)
    loop.run_sync([&](daemon::Core& c) {  // its viewers, as the engine thread holds them now
      if (const QueueSpec* spec = c.queue_spec(q.queue)) queue = *spec;
    });
  return gate.list_owner(access, q.user, queue ? &*queue : nullptr);
}

void fill_row(const storage::UsageRow& r, storage::UsageBy by, const daemon::Prices& prices,
              v1::UsageRow& out) {
  out.set_key(r.key);
  if (by == storage::UsageBy::kJob) {
    out.set_queue(r.queue);
    out.set_user(r.user);
    out.set_flavor(r.flavor);
    out.set_state(to_proto(r.state));
  }
  const std::int64_t held = r.held_total();
  out.set_gpu_milli_seconds(held);
  out.set_gpu_hours(static_cast<double>(held) / kMilliGpuSecondsPerGpuHour);
  out.set_lost_gpu_milli_seconds(r.lost);
  out.set_gpu_hours_lost(static_cast<double>(r.lost) / kMilliGpuSecondsPerGpuHour);
  out.set_succeeded(r.succeeded);
  out.set_failed(r.failed);
  out.set_cancelled(r.cancelled);
  out.set_unfinished(r.unfinished);
  out.set_waited(r.waited);
  if (r.waited > 0) {
    out.set_wait_p50_seconds(r.wait_p50);
    out.set_wait_p90_seconds(r.wait_p90);
  }
  out.set_sampled_gpu_milli_seconds(r.sampled_held);
  if (auto util = r.gpu_util()) out.set_gpu_util_percent(*util);
  if (prices.per_gpu_hour.empty()) return;
  double cost = 0;
  for (const auto& [flavor, milli_seconds] : r.held) {
    if (milli_seconds <= 0) continue;
    auto price = prices.per_gpu_hour.find(flavor);
    if (price == prices.per_gpu_hour.end()) return;  // a flavor without a price: no cost at all
    cost += static_cast<double>(milli_seconds) / kMilliGpuSecondsPerGpuHour * price->second;
  }
  out.set_cost(cost);
}

v1::UsageBy shown(storage::UsageBy by) {
  switch (by) {
    case storage::UsageBy::kQueue:
      return v1::USAGE_BY_QUEUE;
    case storage::UsageBy::kUser:
      return v1::USAGE_BY_USER;
    case storage::UsageBy::kFlavor:
      return v1::USAGE_BY_FLAVOR;
    case storage::UsageBy::kJob:
      break;
  }
  return v1::USAGE_BY_JOB;
}

}  // namespace

grpc::Status usage_page(daemon::Loop& loop, const Readers& readers, const Access& access,
                        const v1::UsageRequest& req, v1::UsageResponse& resp) {
  if (!access.refusal.ok()) return access.refusal;  // a credential that does not hold
  storage::UsageQuery q;
  if (auto st = read_query(req, daemon::Loop::now(), q); !st.ok()) return st;
  if (auto st = restrict_to_visible(loop, *readers.gate, access, q); !st.ok()) return st;
  auto rows = readers.store->usage(q);
  if (!rows) return failed(rows);
  resp.set_since(q.since);
  resp.set_until(q.until);
  resp.set_by(shown(q.by));
  resp.set_currency(readers.prices->currency);
  // A page ends at page_size rows or kListPageBytes, whichever comes first (at least one row);
  // the token names the last row sent.
  const std::size_t page = q.limit - 1;
  std::size_t bytes = 0, sent = 0;
  for (; sent < rows->size() && sent < page; ++sent) {
    v1::UsageRow row;
    fill_row((*rows)[sent], q.by, *readers.prices, row);
    const std::size_t size = row.ByteSizeLong();
    if (bytes > 0 && bytes + size > kListPageBytes) break;
    bytes += size;
    *resp.add_rows() = std::move(row);
  }
  if (sent < rows->size()) {
    const storage::UsageRow& last = (*rows)[sent - 1];
    resp.set_next_page_token(q.by == storage::UsageBy::kJob ? std::to_string(last.number)
                                                            : std::string(kKeyToken) + last.key);
  }
  return grpc::Status::OK;
}

}  // namespace gpuq::api
