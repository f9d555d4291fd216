// Kueue objects to gpuq queue specs (spec/kueue.hpp; the mapping is cli/README.md's "Migrating
// from Kueue"). Every field Kueue defines is either mapped, warned about or refused; a key Kueue
// does not define is refused as unknown, with the nearest allowed key.
#include <optional>
#include <set>
#include <utility>

#include "spec/kueue.hpp"
#include "spec/validate.hpp"
#include "spec/values.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::spec {

bool is_kueue_api_version(std::string_view v) { return v.starts_with("kueue.x-k8s.io/"); }

namespace {

// What gpuq makes of each field it does not map, in the words of the warning.
constexpr std::string_view kNoNamespaces = "gpuq queues are not bound to namespaces";
constexpr std::string_view kNoMetadata = "gpuq keeps no Kubernetes object metadata";

// The object being read, for warnings and for the errors' prefix.
struct Reader {
  const std::string& source;
  KueueImport& out;
  std::string object;  // "ClusterQueue team-a-cq"

  // A field gpuq ignores, and why.
  void warn(yaml::Node n, const Path& at, std::string_view why) { note(n, at, "is ignored: " + std::string(why)); }
  // A field mapped with another meaning than Kueue's.
  void note(yaml::Node n, const Path& at, const std::string& what) {
    const Mark m = n.mark();
    out.warnings.push_back(source + ":" + std::to_string(m.line) + ":" + std::to_string(m.column) + ": " +
                           object + ": " + at.str() + (what.starts_with("is ") ? " " : ": ") + what);
  }
};

bool is_empty_map(yaml::Node n) { return n.is_null() || (n.is_map() && n.size() == 0); }

// metadata: name is the object's name (and namespace a LocalQueue's); the rest is warned about.
std::string read_metadata(yaml::Node n, Path& at, Reader& r, std::string* ns) {
  std::string name;
  for_each_key(n, at,
               {"name", "namespace", "labels", "annotations", "uid", "resourceVersion", "generation",
                "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "managedFields",
                "finalizers", "ownerReferences", "generateName", "selfLink"},
               [&](std::string_view key, yaml::Node v) {
                 if (key == "name")
                   name = string_of(v, at);
                 else if (key == "namespace" && ns != nullptr)
                   *ns = string_of(v, at);
                 else
                   r.warn(v, at, kNoMetadata);
               });
  require(n, at, {"name"});
  return name;
}

ResourceId kueue_resource(std::string_view name, ResourceNames& names, const Path& at) {
  // Kueue names the device plugin's resource; gpuq's GPU is "gpu" whatever the vendor's plugin.
  if (name == "nvidia.com/gpu" || name == "gpu") return kGpu;
  return resource_value(name, names, at);
}

std::vector<std::string> read_names_list(yaml::Node n, Path& at) {
  expect_list(n, at);
  std::vector<std::string> out;
  for (std::size_t i = 0; i < n.size(); ++i) {
    Path::Index ii(at, i);
    out.push_back(string_of(n.item(i), at));
  }
  return out;
}

// One flavor of a resource group: its quotas for the group's covered resources, in their order
// (Kueue requires the same names in the same order), "pods" left out.
FlavorQuota read_group_flavor(yaml::Node n, Path& at, const std::vector<std::string>& covered,
                              ResourceNames& names) {
  FlavorQuota fq;
  std::vector<std::string> listed;
  for_each_key(n, at, {"name", "resources"}, [&](std::string_view key, yaml::Node v) {
    if (key == "name") {
      fq.flavor = string_of(v, at);
      return;
    }
    expect_list(v, at);
    for (std::size_t i = 0; i < v.size(); ++i) {
      Path::Index ri(at, i);
      yaml::Node res = v.item(i);
      std::string rname;
      ResourceQuota q;
      std::optional<ResourceId> id;
      // name comes first in Kueue's output, but a hand-written file may put it anywhere.
      if (yaml::Node nm = res.find("name")) {
        Path::Key k(at, "name");
        rname = string_of(nm, at);
        if (rname != "pods") id = located(nm, at, [&] { return kueue_resource(rname, names, at); });
      }
      for_each_key(res, at, {"name", "nominalQuota", "borrowingLimit", "lendingLimit"},
                   [&](std::string_view rk, yaml::Node rv) {
                     if (rk == "name" || !id) return;
                     const Quantity value = quantity_of(rv, *id, at);
                     if (rk == "nominalQuota")
                       q.nominal = value;
                     else if (rk == "borrowingLimit")
                       q.borrowing_limit = value;
                     else
                       q.lending_limit = value;
                   });
      require(res, at, {"name", "nominalQuota"});
      listed.push_back(rname);
      if (id) fq.resources.emplace_back(*id, q);
    }
  });
  require(n, at, {"name", "resources"});
  if (listed != covered) {
    std::string want, got;
    for (const auto& c : covered) want += (want.empty() ? "" : ", ") + c;
    for (const auto& c : listed) got += (got.empty() ? "" : ", ") + c;
    Path::Key k(at, "resources");
    fail_at(n.find("resources"), at,
            "lists " + (got.empty() ? std::string("no resources") : got) +
                "; it must list the group's coveredResources in their order (" + want + ")");
  }
  return fq;
}

void read_resource_groups(yaml::Node n, Path& at, QueueSpec& q, ResourceNames& names, Reader& r) {
  expect_list(n, at);
  if (n.size() == 0)
    fail_at(n, at,
            "is empty: Kueue admits nothing to such a ClusterQueue, while a gpuq queue without "
            "quotas is limited only by free capacity; give it a resource group");
  std::set<std::string> seen_flavors;
  for (std::size_t g = 0; g < n.size(); ++g) {
    Path::Index gi(at, g);
    yaml::Node group = n.item(g);
    std::vector<std::string> covered;
    for_each_key(group, at, {"coveredResources", "flavors"}, [&](std::string_view key, yaml::Node v) {
      if (key == "coveredResources") {
        covered = read_names_list(v, at);
        for (std::size_t i = 0; i < covered.size(); ++i)
          if (covered[i] == "pods") {
            Path::Index ci(at, i);
            r.warn(v.item(i), at,
                   "gpuq does not count pods against a quota (a queue's maxPodsPerJob caps one "
                   "job's pods)");
          }
        return;
      }
      expect_list(v, at);
      for (std::size_t i = 0; i < v.size(); ++i) {
        Path::Index fi(at, i);
        FlavorQuota fq = read_group_flavor(v.item(i), at, covered, names);
        if (!seen_flavors.insert(fq.flavor).second) {
          Path::Key k(at, "name");
          fail_at(v.item(i).find("name"), at,
                  quoted(fq.flavor) + " is in this ClusterQueue already; a flavor belongs to one "
                                      "resource group");
        }
        q.quotas.push_back(std::move(fq));
      }
    });
    require(group, at, {"coveredResources", "flavors"});
  }
  if (n.size() > 1) {
    Path::Index gi(at, 1);
    r.note(n.item(1), at,
           "gpuq gives a job one flavor for all its resources, where Kueue picks a flavor per "
           "resource group: this group's flavors are tried after the first group's, and a job is "
           "held only to the quota of the one flavor it gets (list all resources in one group to "
           "keep Kueue's limits)");
  }
}

PreemptionSpec read_kueue_preemption(yaml::Node n, Path& at) {
  PreemptionSpec p;
  for_each_key(n, at, {"withinClusterQueue", "reclaimWithinCohort", "borrowWithinCohort"},
               [&](std::string_view key, yaml::Node v) {
                 if (key == "withinClusterQueue") {
                   p.within_queue = enum_of<WithinQueuePolicy>(v, at);
                 } else if (key == "reclaimWithinCohort") {
                   p.reclaim_within_cohort = enum_of<ReclaimPolicy>(v, at);
                 } else {
                   for_each_key(v, at, {"policy", "maxPriorityThreshold"},
                                [&](std::string_view bk, yaml::Node bv) {
                                  if (bk == "policy")
                                    p.borrow_within_cohort = enum_of<BorrowWithinCohortPolicy>(bv, at);
                                  else
                                    p.borrow_max_priority_threshold = int32_of(bv, at);
                                });
                 }
               });
  return p;
}

// fairSharing.weight is a Kubernetes quantity: "1", "0.5", "500m".
double read_weight(yaml::Node n, Path& at) {
  const std::string_view text = text_of(n, at, "a number");
  if (text.ends_with('m')) {
    const auto milli = located(n, at, [&] { return int_value(text.substr(0, text.size() - 1), at); });
    return static_cast<double>(milli) / 1000.0;
  }
  return number_of(n, at);
}

void read_cluster_queue_spec(yaml::Node n, Path& at, QueueSpec& q, KueueImport& out, Reader& r) {
  bool has_groups = false;
  for_each_key(
      n, at,
      {"cohort", "cohortName", "namespaceSelector", "queueingStrategy", "resourceGroups", "preemption",
       "fairSharing", "flavorFungibility", "admissionChecks", "admissionChecksStrategy", "stopPolicy",
       "admissionScope"},
      [&](std::string_view key, yaml::Node v) {
        if (key == "cohort" || key == "cohortName") {  // v1beta1, v1beta2
          q.cohort = string_of(v, at);
        } else if (key == "queueingStrategy") {
          q.strategy = enum_of<QueueingStrategy>(v, at);
        } else if (key == "resourceGroups") {
          has_groups = true;
          read_resource_groups(v, at, q, out.names, r);
        } else if (key == "preemption") {
          q.preemption = read_kueue_preemption(v, at);
        } else if (key == "fairSharing") {
          for_each_key(v, at, {"weight"}, [&](std::string_view, yaml::Node w) { q.weight = read_weight(w, at); });
        } else if (key == "namespaceSelector") {
          if (!is_empty_map(v)) r.warn(v, at, kNoNamespaces);  // {}: every namespace, as gpuq
        } else if (key == "flavorFungibility") {
          r.warn(v, at,
                 "gpuq tries a queue's flavors in order and takes the first where the job fits "
                 "(borrowing included) before preempting");
        } else if (key == "admissionChecks" || key == "admissionChecksStrategy") {
          r.warn(v, at, "gpuq has no admission checks: jobs are admitted on quota and capacity alone");
        } else if (key == "stopPolicy") {
          if (text_of(v, at) != "None") r.warn(v, at, "gpuq queues cannot be held: the queue admits jobs");
        } else {
          r.warn(v, at, kNoNamespaces);  // admissionScope: which namespaces' workloads it admits
        }
      });
  if (!has_groups)
    fail_at(n, at,
            "has no resourceGroups: Kueue admits nothing to such a ClusterQueue, while a gpuq queue "
            "without quotas is limited only by free capacity; give it a resource group");
}

void read_cluster_queue(yaml::Node root, Path& at, Reader& r, const std::string& name) {
  QueueSpec q;
  q.name = QueueName(name);
  for_each_key(root, at, {"apiVersion", "kind", "metadata", "spec", "status"}, [&](std::string_view key, yaml::Node v) {
    if (key == "spec")
      read_cluster_queue_spec(v, at, q, r.out, r);
    else if (key == "status")
      r.warn(v, at, "gpuq reports its own (gpuq queues)");
  });
  require(root, at, {"spec"});
  // gpuq's own checks (names, limits against nominal); their paths are gpuq's (quotas[0]...).
  located(root.find("spec"), at, [&] { validate(q, at, r.out.names); });
  r.out.queues.push_back(std::move(q));
}

void read_resource_flavor(yaml::Node root, Path& at, Reader& r, const std::string& name) {
  for_each_key(root, at, {"apiVersion", "kind", "metadata", "spec", "status"}, [&](std::string_view key, yaml::Node v) {
    if (key == "status") {
      r.warn(v, at, "gpuq reports its own");
    } else if (key == "spec") {
      for_each_key(v, at, {"nodeLabels", "nodeTaints", "tolerations", "topologyName"},
                   [&](std::string_view sk, yaml::Node sv) {
                     if (sk == "nodeLabels")
                       r.warn(sv, at,
                              "gpuq nodes name their flavor (a node's flavor: " + name +
                                  "); labels do not pick a flavor's nodes");
                     else if (sk == "nodeTaints")
                       r.warn(sv, at, "taint the nodes themselves (a node's taints in gpuq apply -f)");
                     else if (sk == "tolerations")
                       r.warn(sv, at, "gpuq adds no tolerations to a flavor's jobs; jobs state their own");
                     else
                       r.warn(sv, at, "gpuq's topology levels are cluster-wide (gpuqd's topology.levels)");
                   });
    }
  });
  check_name(name, at);
  r.out.flavors.push_back(name);
}

void read_cohort(yaml::Node root, Path& at, Reader& r) {
  for_each_key(root, at, {"apiVersion", "kind", "metadata", "spec", "status"}, [&](std::string_view key, yaml::Node v) {
    if (key == "status") {
      r.warn(v, at, "gpuq reports its own");
    } else if (key == "spec") {
      for_each_key(v, at, {"parentName", "resourceGroups", "fairSharing"}, [&](std::string_view sk, yaml::Node sv) {
        if (sk == "parentName")
          r.warn(sv, at, "gpuq cohorts are flat: its ClusterQueues borrow only from each other");
        else if (sk == "resourceGroups")
          r.warn(sv, at,
                 "gpuq cohorts hold no quota of their own: only their ClusterQueues' quota is "
                 "shared");
        else
          r.warn(sv, at, "gpuq cohorts have no weight of their own");
      });
    }
  });
}

void read_local_queue(yaml::Node root, Path& at, Reader& r, const std::string& name, const std::string& ns) {
  std::string cq;
  for_each_key(root, at, {"apiVersion", "kind", "metadata", "spec", "status"}, [&](std::string_view key, yaml::Node v) {
    if (key != "spec") return;
    for_each_key(v, at, {"clusterQueue", "stopPolicy", "fairSharing"}, [&](std::string_view sk, yaml::Node sv) {
      if (sk == "clusterQueue") cq = string_of(sv, at);
    });
  });
  // gpuq has no namespaces, so a LocalQueue has nothing to map to: a job names its queue.
  std::string why = "gpuq has no namespaces: jobs name the queue itself";
  if (!cq.empty()) why += " (gpuq submit -q " + cq + ")";
  r.out.warnings.push_back(r.source + ":" + std::to_string(root.mark().line) + ":" +
                           std::to_string(root.mark().column) + ": LocalQueue " +
                           (ns.empty() ? "" : ns + "/") + name + " is ignored: " + why);
}

void read_object(yaml::Node root, KueueImport& out, const std::string& source) {
  Path at;
  if (!root.is_map()) throw SpecError("expected a Kubernetes object (apiVersion, kind), got " + root.shown(), root.mark());
  require(root, at, {"apiVersion", "kind"});
  std::string api, kind;
  {
    Path::Key k(at, "apiVersion");
    api = string_of(root.find("apiVersion"), at);
  }
  {
    Path::Key k(at, "kind");
    kind = string_of(root.find("kind"), at);
  }
  Reader r{source, out, kind};
  if (!is_kueue_api_version(api)) {
    out.warnings.push_back(source + ":" + std::to_string(root.mark().line) + ":" +
                           std::to_string(root.mark().column) + ": " + kind + " (" + api +
                           ") is ignored: not a Kueue object");
    return;
  }
  if (api != "kueue.x-k8s.io/v1beta1" && api != "kueue.x-k8s.io/v1beta2" && api != "kueue.x-k8s.io/v1alpha1") {
    Path::Key k(at, "apiVersion");
    fail_at(root.find("apiVersion"), at,
            quoted(api) + " is not a version gpuq reads; use kueue.x-k8s.io/v1beta1, v1beta2 or v1alpha1");
  }
  static const std::set<std::string_view> kRead = {"ClusterQueue", "ResourceFlavor", "Cohort", "LocalQueue"};
  if (!kRead.contains(kind)) {
    out.warnings.push_back(source + ":" + std::to_string(root.mark().line) + ":" +
                           std::to_string(root.mark().column) + ": " + kind +
                           " is ignored: gpuq applies ClusterQueue, ResourceFlavor, Cohort and "
                           "LocalQueue only");
    return;
  }
  require(root, at, {"metadata"});
  std::string name, ns;
  {
    Path::Key k(at, "metadata");
    yaml::Node md = root.find("metadata");
    if (yaml::Node nm = md.find("name"); nm.is_scalar()) r.object = kind + " " + std::string(nm.text());
    name = read_metadata(md, at, r, kind == "LocalQueue" ? &ns : nullptr);
  }
  // Errors from here on say which object: `ClusterQueue "q": spec...: reason`.
  try {
    if (kind == "ClusterQueue")
      read_cluster_queue(root, at, r, name);
    else if (kind == "ResourceFlavor")
      read_resource_flavor(root, at, r, name);
    else if (kind == "Cohort")
      read_cohort(root, at, r);
    else
      read_local_queue(root, at, r, name, ns);
  } catch (SpecError& e) {
    const Mark m = e.mark() ? *e.mark() : root.at(e.path()).mark();
    std::string what = kind + " " + quoted(name) + ": ";
    if (!e.path_text().empty()) what += e.path_text() + ": ";
    throw SpecError(what + e.reason(), m);
  }
}

}  // namespace

KueueImport read_kueue(const std::vector<yaml::Document>& docs, const std::string& source) {
  KueueImport out;
  for (const yaml::Document& doc : docs) {
    if (doc.root().is_null()) continue;
    read_document(doc, source, [&] { read_object(doc.root(), out, source); });
  }
  return out;
}

}  // namespace gpuq::spec
