// `gpuq explain JOB`: the job's explanation as text (format.hpp's explanation_text).
#include <cmath>
#include <cstdio>
#include <sstream>

#include "cli/format.hpp"

namespace gpuq::cli {
namespace {

constexpr std::int64_t kUnlimited = std::int64_t{1} << 52;  // the server's "no limit" (kMaxQuantity)

// A quantity of `resource` in its own unit: GPUs and cores in decimal, memory in Ki/Mi/Gi.
std::string amount(const std::string& resource, std::int64_t v) {
  if (v >= kUnlimited) return "unlimited";
  if (resource == "gpu" || resource == "cpu") return human_milli(v);
  if (resource == "memory") return human_bytes(v);
  return std::to_string(v);
}

std::string ordinal(std::int64_t n) {
  const std::int64_t tens = n % 100;
  const char* suffix = (tens >= 11 && tens <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suffix;
}

std::string fixed(double v, const char* format = "%.3f") {
  char buf[48];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// Each line of `text` two spaces in.
void indented(std::ostringstream& o, const std::string& text) {
  for (std::size_t at = 0, next; at < text.size(); at = next + 1) {
    next = text.find('\n', at);
    if (next == std::string::npos) next = text.size();
    o << "  " << text.substr(at, next - at) << "\n";
  }
}

void order_lines(std::ostringstream& o, const v1::Job& job, const v1::JobExplanation& e) {
  if (e.queue_pending() > 0)
    o << "Queue order: " << ordinal(e.queue_position()) << " of " << e.queue_pending() << " pending in queue "
      << escaped(job.spec().queue()) << " (higher priority first, then earlier submission)\n";
  else if (job.state() == v1::JOB_STATE_PENDING)
    o << "Queue order: next (it holds a booking and waits for its victims to stop)\n";
  if (e.cycle_queues() == 0) return;
  o << "Cycle order: its queue would be offered " << ordinal(e.cycle_rank()) << " of " << e.cycle_queues()
    << (e.cycle_queues() == 1 ? " queue" : " queues") << " with pending jobs\n";
  const auto& k = e.order();
  o << "Ordered by (first to last):\n"
    << "  within nominal  " << (k.within_nominal() ? "yes (offered before every queue that would borrow)" : "no (it would borrow)") << "\n"
    << "  share after     ";
  if (k.share_infinite())
    o << "infinite (weight 0 and borrowing: offered last)\n";
  else
    o << fixed(k.share() / 1000.0) << " of what the cohort lends, over weight " << fixed(k.weight(), "%g")
      << (k.history() > 0 ? " (usage history " + fixed(k.history() / 1000.0) + ")" : std::string())
      << (k.flavor().empty() ? std::string() : " on " + escaped(k.flavor())) << "\n";
  const std::string& named = job.spec().priority();
  o << "  priority        " << k.priority() << (named.empty() || named == std::to_string(k.priority()) ? "" : " (" + escaped(named) + ")")
    << "\n"
    << "  submitted       " << format_time(k.submitted_at()) << "\n";
}

void quota_lines(std::ostringstream& o, const v1::JobExplanation& e) {
  if (e.quota_size() == 0) return;
  o << "Quota:\n";
  Table t({"FLAVOR", "RESOURCE", "ASKS", "NOMINAL", "USED", "BORROWED", "BORROW LIMIT", "LEND LIMIT", "CAN ADD",
           "AT MOST", "COHORT POOL"});
  for (const auto& q : e.quota()) {
    const std::string& r = q.resource();
    t.add({escaped(q.flavor()), escaped(r), amount(r, q.requested()), amount(r, q.nominal()), amount(r, q.used()),
           amount(r, q.borrowed()), q.has_borrowing_limit() ? amount(r, q.borrowing_limit()) : "-",
           q.has_lending_limit() ? amount(r, q.lending_limit()) : "-", amount(r, q.headroom()),
           amount(r, q.reachable()),
           q.cohort().empty() ? "-"
                              : escaped(q.cohort()) + ": " + amount(r, q.cohort_used()) + " of " +
                                    amount(r, q.cohort_lendable()) + " drawn"});
  }
  indented(o, t.render(0));
}

void room_lines(std::ostringstream& o, const v1::JobExplanation& e) {
  if (e.room_size() == 0) return;
  o << "Nodes:\n";
  Table t({"FLAVOR", "NODES", "OPEN", "FIT A POD NOW", "GPUS FREE", "LARGEST FREE", "STRANDED", "JOB"});
  for (const auto& r : e.room()) {
    const double stranded = r.gpu_free() > 0 ? 100.0 * static_cast<double>(r.gpu_stranded()) / static_cast<double>(r.gpu_free()) : 0;
    t.add({escaped(r.flavor()), std::to_string(r.nodes()), std::to_string(r.open()), std::to_string(r.fitting()),
           human_milli(r.gpu_free()), std::to_string(r.largest_free_block()) + (r.largest_free_block() == 1 ? " GPU" : " GPUs"),
           human_milli(r.gpu_stranded()) + " (" + fixed(stranded, "%.0f") + "%)",
           std::to_string(r.pods()) + (r.pods() == 1 ? " pod" : " pods") +
               (r.gpu_per_pod() > 0 ? ", " + human_milli(r.gpu_per_pod()) + " GPU per pod" : std::string())});
  }
  indented(o, t.render(0));
  o << "  (stranded: free GPUs on nodes where none of its GPU pods fits)\n";
}

}  // namespace

std::string explanation_text(const v1::Job& job, const v1::JobExplanation& e) {
  std::ostringstream o;
  o << "Job " << escaped(job.spec().id()) << " in queue " << escaped(job.spec().queue()) << ": " << state_name(job.state())
    << "\n"
    << "Why: " << escaped(e.reason().empty() ? "-" : e.reason()) << "\n";
  order_lines(o, job, e);
  quota_lines(o, e);
  room_lines(o, e);
  if (e.has_preempted()) {
    const auto& p = e.preempted();
    o << "Preempted: by " << escaped(p.by()) << (p.by_queue().empty() ? "" : " (queue " + escaped(p.by_queue()) + ")")
      << (p.reason().empty() ? "" : ", " + escaped(p.reason())) << (p.at() > 0 ? ", at " + format_time(p.at()) : "")
      << "; " << job.preemptions() << (job.preemptions() == 1 ? " time" : " times") << " in all\n";
  }
  o << "Computed:  " << format_time(e.computed_at()) << "\n";
  return o.str();
}

}  // namespace gpuq::cli
