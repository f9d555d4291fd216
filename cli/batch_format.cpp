#include "cli/batch_format.hpp"

#include "spec/job_array.hpp"

namespace gpuq::cli {

std::vector<v1::Job> fold_arrays(std::vector<v1::Job> jobs) {
  std::vector<v1::Job> out;
  out.reserve(jobs.size());
  const auto foldable = [](const v1::Job& j) { return !j.array_id().empty() && j.state() == v1::JOB_STATE_PENDING; };
  for (std::size_t i = 0; i < jobs.size();) {
    if (!foldable(jobs[i])) {
      out.push_back(std::move(jobs[i++]));
      continue;
    }
    std::vector<std::int32_t> indices{jobs[i].array_index()};
    std::size_t end = i + 1;
    while (end < jobs.size() && foldable(jobs[end]) && jobs[end].array_id() == jobs[i].array_id() &&
           jobs[end].array_index() > indices.back())
      indices.push_back(jobs[end++].array_index());
    v1::Job row = std::move(jobs[i]);
    if (indices.size() > 1) row.mutable_spec()->set_id(row.array_id() + "_[" + spec::array_text(indices) + "]");
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
