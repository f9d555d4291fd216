// A queue's `kubernetes` block (docs/tasks/kubernetes.md, "Jobs from the command line on Kubernetes"): the
// namespace, default and allowed images, and the pod template, checked where it is written and
// kept as canonical JSON (spec/yaml_json.hpp). Split from yaml_read.cpp.
#include <string>
#include <string_view>

#include "spec/limits.hpp"
#include "spec/yaml_json.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::spec {
namespace {

// A pod template's keys that gpuq sets on every pod it makes (spec: nodeName, schedulerName),
// and more containers than the one the job's container is merged onto, refused where they are
// written. `n` is the template (`at` its path); metadata and spec must be maps.
void check_pod_template(yaml::Node n, Path& at) {
  if (!n.is_map())
    fail_at(n, at, "expected a map with the keys metadata and spec (a Kubernetes PodTemplateSpec), got " + n.shown());
  for_each_key(n, at, {"metadata", "spec"}, [&](std::string_view key, yaml::Node v) {
    if (key == "metadata") {
      if (!v.is_map()) fail_at(v, at, "expected a map (an ObjectMeta: labels, annotations), got " + v.shown());
      return;
    }
    if (!v.is_map())
      fail_at(v, at, "expected a map (a PodSpec: serviceAccountName, volumes, containers, ...), got " + v.shown());
    for (std::size_t i = 0; i < v.size(); ++i) {
      const std::string_view k = v.key(i).text();
      Path::Key pk(at, k);
      if (k == "nodeName") {
        fail_at(v.key(i), at, "is set by gpuq (the node the job is placed on); remove it");
      } else if (k == "schedulerName") {
        fail_at(v.key(i), at, "is set by gpuq (its pods are placed by gpuq, schedulerName gpuq); remove it");
      } else if (k == "containers") {
        const yaml::Node c = v.value(i);
        if (!c.is_list()) fail_at(c, at, "expected a list of one container, got " + c.shown());
        if (c.size() > 1)
          fail_at(c, at,
                  "lists " + std::to_string(c.size()) +
                      " containers; at most 1 is allowed (the job's container is merged onto it)");
      }
    }
  });
}

// The 4 hex digits at `at` of `s` as a number; -1 when there are not 4.
int hex4_at(std::string_view s, std::size_t at) {
  if (at + 4 > s.size()) return -1;
  int v = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const char c = s[i];
    const int d = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

// JSON writes a character beyond U+FFFF as a surrogate pair of \u escapes (Python's json does),
// which YAML refuses: each pair in a string becomes YAML's \UXXXXXXXX. The rest is left as it is.
std::string joined_surrogates(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  bool in_string = false;
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') in_string = !in_string;
    if (!in_string || c != '\\' || i + 1 == json.size()) {
      out.push_back(c);
      continue;
    }
    const int high = json[i + 1] == 'u' ? hex4_at(json, i + 2) : -1;
    const int low = high >= 0xD800 && high <= 0xDBFF && i + 7 < json.size() && json[i + 6] == '\\' && json[i + 7] == 'u'
                        ? hex4_at(json, i + 8)
                        : -1;
    if (low >= 0xDC00 && low <= 0xDFFF) {
      const unsigned code = 0x10000 + ((static_cast<unsigned>(high) - 0xD800) << 10) + (static_cast<unsigned>(low) - 0xDC00);
      out += "\\U";
      for (int shift = 28; shift >= 0; shift -= 4) out.push_back("0123456789ABCDEF"[(code >> shift) & 0xf]);
      i += 11;
    } else {
      out.push_back(c);  // an escape, as it is: its second character is never taken for a quote
      out.push_back(json[++i]);
    }
  }
  return out;
}

}  // namespace

// kubernetes: {namespace: ml, defaultImage: ..., allowedImages: [...], podTemplate: {...}}; the
// template kept as JSON (spec/yaml_json.hpp).
QueueKubernetes read_queue_kubernetes(yaml::Node n, Path& at) {
  if (!n.is_map())
    fail_at(n, at, "expected a map such as {namespace: ml, defaultImage: nvcr.io/nvidia/pytorch:24.05-py3}, got " + n.shown());
  QueueKubernetes k;
  for_each_key(n, at, {"namespace", "defaultImage", "allowedImages", "podTemplate"},
               [&](std::string_view key, yaml::Node v) {
                 if (key == "namespace" || key == "defaultImage") {
                   (key == "namespace" ? k.ns : k.default_image) = string_of(v, at);
                   if (text_of(v, at).empty()) fail_at(v, at, "is empty; give one or leave the key out");
                 } else if (key == "allowedImages") {
                   k.allowed_images = read_names(v, at, limits::kAllowedImages, "images");
                 } else {
                   check_pod_template(v, at);
                   k.pod_template = to_json(v);
                 }
               });
  return k;
}

std::string pod_template_from_json(std::string_view json, Path& at) {
  if (json.empty()) return {};
  if (json.size() > limits::kPodTemplateBytes)
    fail(at, "is " + std::to_string(json.size()) + " bytes long; at most " +
                 std::to_string(limits::kPodTemplateBytes) + " are allowed");
  yaml::Document doc;
  try {
    doc = yaml::parse_one(joined_surrogates(json));  // JSON is YAML, but for surrogate pairs
  } catch (const SpecError& e) {
    fail(at, std::string("is not JSON: ") + e.what());
  }
  try {
    check_pod_template(doc.root(), at);
  } catch (const SpecError& e) {
    // Without the line and column: they would be the JSON text's, which the caller never wrote.
    Path where;
    for (const SpecError::Part& p : e.path()) p.is_index ? where.push_index(p.index) : where.push_key(p.key);
    throw SpecError(where, e.reason());
  }
  return to_json(doc.root());
}

}  // namespace gpuq::spec
