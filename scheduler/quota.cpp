#include "scheduler/quota.hpp"

#include <algorithm>
#include <map>

#include "drf/share.hpp"

namespace gpuq {

void QuotaBook::set_flavor_count(std::size_t n) {
  if (n <= flavors_) return;
  ++version_;
  flavors_ = n;
  for (auto& q : queues_) {
    q.rows.resize(n);
    q.usage.resize(n);
  }
  for (auto& c : cohorts_) {
    c.lendable.resize(n);
    c.used.resize(n);
  }
}

void QuotaBook::set_queue(QueueIdx q, const QueueSpec& spec, const std::vector<FlavorId>& flavors) {
  ++version_;
  if (q >= queues_.size()) {
    queues_.resize(q + 1);
    cohort_names_.resize(q + 1);
  }
  QueueQuota& qq = queues_[q];
  qq.unlimited = spec.quotas.empty();
  qq.weight = spec.weight;
  qq.order = flavors;
  qq.rows.assign(flavors_, Row{});
  qq.usage.resize(flavors_);
  for (std::size_t i = 0; i < spec.quotas.size(); ++i) {
    Row& row = qq.rows[flavors[i]];
    row.present = true;
    // GPUs are what this scheduler guards: a flavor listed without gpu quota has none (so a
    // typo such as "gpus" cannot leave GPUs unlimited). Other unlisted resources are unlimited.
    row.listed[kGpu] = true;
    for (const auto& [r, quota] : spec.quotas[i].resources) {
      row.listed[r] = true;
      row.nominal[r] = quota.nominal;
      row.cap[r] = quota.borrowing_limit ? quota.nominal + *quota.borrowing_limit : kUnbounded;
      row.guaranteed[r] =
          quota.lending_limit ? std::max<Quantity>(0, quota.nominal - *quota.lending_limit) : 0;
      row.lendable[r] = quota.nominal - row.guaranteed[r];
    }
  }
  cohort_names_[q] = spec.cohort;
  rebuild_cohorts();
}

void QuotaBook::rebuild_cohorts() {
  std::map<std::string, int> ids;
  cohorts_.clear();
  for (QueueIdx q = 0; q < queues_.size(); ++q) {
    QueueQuota& qq = queues_[q];
    qq.cohort = -1;
    if (cohort_names_[q].empty()) continue;
    auto [it, fresh] = ids.try_emplace(cohort_names_[q], static_cast<int>(cohorts_.size()));
    if (fresh)
      cohorts_.push_back(Cohort{cohort_names_[q], {}, std::vector<ResourceVec>(flavors_),
                                std::vector<ResourceVec>(flavors_), ResourceVec{}});
    qq.cohort = it->second;
    Cohort& c = cohorts_[it->second];
    c.members.push_back(q);
    for (std::size_t f = 0; f < flavors_; ++f) {
      const Row& row = qq.rows[f];
      if (!row.present) continue;
      c.lendable[f] += row.lendable;
      c.lendable_total += row.lendable;
      for (std::size_t r = 0; r < kMaxResources; ++r)
        if (row.listed[r]) c.used[f].v[r] += std::max<Quantity>(0, qq.usage[f].v[r] - row.guaranteed.v[r]);
    }
  }
}

bool QuotaBook::has_flavor(QueueIdx q, FlavorId f) const {
  const QueueQuota& qq = queues_[q];
  return qq.unlimited || (f < qq.rows.size() && qq.rows[f].present);
}

Quantity QuotaBook::headroom(QueueIdx q, FlavorId f, ResourceId r) const {
  const QueueQuota& qq = queues_[q];
  if (qq.unlimited || !qq.rows[f].listed[r]) return kUnbounded;
  const Row& row = qq.rows[f];
  const Quantity u = qq.usage[f][r];
  if (qq.cohort < 0) return row.nominal[r] - u;
  const Cohort& c = cohorts_[qq.cohort];
  // The first (guaranteed - usage) units come from the queue's own guaranteed part; the rest
  // from the pool.
  Quantity own = std::max<Quantity>(0, row.guaranteed[r] - u);
  Quantity pool = c.lendable[f][r] - c.used[f][r];
  return std::min(row.cap[r] - u, own + pool);
}

std::optional<QuotaShortfall> QuotaBook::check(QueueIdx q, FlavorId f, const ResourceVec& d) const {
  const QueueQuota& qq = queues_[q];
  if (qq.unlimited) return std::nullopt;
  const Row& row = qq.rows[f];
  for (ResourceId r = 0; r < kMaxResources; ++r) {
    if (d[r] <= 0 || !row.listed[r]) continue;
    Quantity room = headroom(q, f, r);
    if (d[r] <= room) continue;
    QuotaLimit limit = QuotaLimit::kNominal;
    Quantity bound = row.nominal[r];
    if (qq.cohort >= 0) {
      limit = row.cap[r] - qq.usage[f][r] == room ? QuotaLimit::kBorrowingLimit
                                                  : QuotaLimit::kCohortPool;
      bound = row.cap[r];
    }
    return QuotaShortfall{f,     r, d[r], std::max<Quantity>(0, room), limit, qq.usage[f][r],
                          bound, row.nominal[r]};
  }
  return std::nullopt;
}

bool QuotaBook::within_nominal(QueueIdx q, FlavorId f, const ResourceVec& d) const {
  const QueueQuota& qq = queues_[q];
  if (qq.unlimited) return false;  // no quota means no guarantee to be within
  const Row& row = qq.rows[f];
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (row.listed[r] && d[r] > 0 && qq.usage[f][r] + d[r] > row.nominal[r]) return false;
  return true;
}

bool QuotaBook::within_cap(QueueIdx q, FlavorId f, const ResourceVec& d) const {
  const QueueQuota& qq = queues_[q];
  if (qq.unlimited) return true;
  const Row& row = qq.rows[f];
  const Quantity* cap = qq.cohort < 0 ? row.nominal.v.data() : row.cap.v.data();
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (row.listed[r] && d[r] > 0 && qq.usage[f][r] + d[r] > cap[r]) return false;
  return true;
}

Quantity QuotaBook::reachable(QueueIdx q, FlavorId f, ResourceId r) const {
  const QueueQuota& qq = queues_[q];
  if (qq.unlimited || !qq.rows[f].listed[r]) return kUnbounded;
  const Row& row = qq.rows[f];
  if (qq.cohort < 0) return row.nominal[r];
  return std::min(row.cap[r], row.guaranteed[r] + cohorts_[qq.cohort].lendable[f][r]);
}

void QuotaBook::charge(QueueIdx q, FlavorId f, const ResourceVec& d, int sign) {
  ++version_;
  QueueQuota& qq = queues_[q];
  ResourceVec& u = qq.usage[f];
  if (qq.cohort < 0 || qq.unlimited || !qq.rows[f].present) {
    if (sign > 0) u += d; else u -= d;
    return;
  }
  const Row& row = qq.rows[f];
  Cohort& c = cohorts_[qq.cohort];
  for (ResourceId r = 0; r < kMaxResources; ++r) {
    if (d[r] == 0) continue;
    Quantity before = u[r];
    u[r] += sign * d[r];
    if (!row.listed[r]) continue;
    c.used[f][r] += std::max<Quantity>(0, u[r] - row.guaranteed[r]) -
                    std::max<Quantity>(0, before - row.guaranteed[r]);
  }
}

drf::Share QuotaBook::borrowing_share(QueueIdx q, FlavorId f, const ResourceVec* extra) const {
  const QueueQuota& qq = queues_[q];
  const Cohort* c = cohort_of(q);
  if (c == nullptr) return {};  // no cohort: nothing to borrow (Kueue: a root has no share)
  // Kueue sums what is borrowed over the flavors, per resource name, and divides by what the
  // whole cohort lends of that resource over all its flavors.
  ResourceVec borrowed;
  bool any = false;
  for (FlavorId g : qq.order) {
    const Row& row = qq.rows[g];
    for (ResourceId r = 0; r < kMaxResources; ++r) {
      if (!row.listed[r]) continue;
      const Quantity b = qq.usage[g][r] + (extra && g == f ? (*extra)[r] : 0) - row.nominal[r];
      if (b > 0) {
        borrowed[r] += b;
        any = true;
      }
    }
  }
  if (!any) return {};
  double best = 0;
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (borrowed[r] > 0 && c->lendable_total[r] > 0)
      best = std::max(best, drf::borrowed_permille(borrowed[r], c->lendable_total[r]));
  return drf::weighted(best, qq.weight);
}

bool QuotaBook::borrowing_any(QueueIdx q) const {
  const QueueQuota& qq = queues_[q];
  if (qq.cohort < 0) return false;
  for (FlavorId g : qq.order)
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (qq.rows[g].listed[r] && qq.usage[g][r] > qq.rows[g].nominal[r]) return true;
  return false;
}

}  // namespace gpuq
