#include "cli/batch_format.hpp"

#include <stdexcept>
#include <string_view>
#include <utility>

namespace gpuq::cli {

namespace {

// A row's members' indices as ranges: its own index, or the run gpuqd folded (Job.array_indices,
// "0-99,200"). Empty for text that is not that.
std::vector<std::pair<std::int64_t, std::int64_t>> member_ranges(const v1::Job& j) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (j.array_indices().empty()) return {{j.array_index(), j.array_index()}};
  std::string_view text = j.array_indices();
  while (!text.empty()) {
    const auto comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const auto dash = item.find('-');
    try {
      const std::int64_t lo = std::stoll(std::string(item.substr(0, dash)));
      const std::int64_t hi = dash == std::string_view::npos ? lo : std::stoll(std::string(item.substr(dash + 1)));
      out.emplace_back(lo, hi);
    } catch (const std::exception&) {
      return {};
    }
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

}  // namespace

std::vector<v1::Job> fold_arrays(std::vector<v1::Job> jobs) {
  std::vector<v1::Job> out;
  out.reserve(jobs.size());
  const auto foldable = [](const v1::Job& j) { return !j.array_id().empty() && j.state() == v1::JOB_STATE_PENDING; };
  for (std::size_t i = 0; i < jobs.size();) {
    auto ranges = member_ranges(jobs[i]);
    if (!foldable(jobs[i]) || ranges.empty()) {
      out.push_back(std::move(jobs[i++]));
      continue;
    }
    std::size_t end = i + 1, members = jobs[i].array_indices().empty() ? 1 : 2;
    while (end < jobs.size() && foldable(jobs[end]) && jobs[end].array_id() == jobs[i].array_id()) {
      auto more = member_ranges(jobs[end]);
      if (more.empty() || more.front().first <= ranges.back().second) break;
      for (const auto& r : more) {
        if (r.first == ranges.back().second + 1)
          ranges.back().second = r.second;
        else
          ranges.push_back(r);
      }
      ++members;
      ++end;
    }
    v1::Job row = std::move(jobs[i]);
    if (members > 1) {
      std::string text;
      for (const auto& [lo, hi] : ranges) {
        if (!text.empty()) text += ',';
        text += std::to_string(lo);
        if (hi != lo) text += '-' + std::to_string(hi);
      }
      row.mutable_spec()->set_id(row.array_id() + "_[" + text + "]");
    }
    out.push_back(std::move(row));
    i = end;
  }
  return out;
}

std::string batch_detail(const v1::Job& j) {
  std::string o;
  if (j.spec().retries() > 0)
    o += "Retries:     " + std::to_string(j.retries_used()) + " of " + std::to_string(j.spec().retries()) + " used\n";
  if (!j.array_id().empty()) o += "Array:       " + j.array_id() + ", index " + std::to_string(j.array_index()) + "\n";
  if (j.spec().after_size() > 0) {
    o += "After:      ";
    for (const auto& d : j.spec().after())
      o += " " + std::string(d.kind() == "ok" ? "after-ok " : d.kind() == "any" ? "after-any " : "after-not-ok ") + d.job();
    o += "\n";
  }
  if (j.spec().singleton()) o += "Singleton:   one job of its owner's named so at a time\n";
  return o;
}

}  // namespace gpuq::cli
