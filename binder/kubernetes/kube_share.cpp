// Fractional GPUs with the stock NVIDIA device plugin, as KAI-Scheduler does it: the device
// plugin knows nothing of sharing, so each GPU gpuq shares is held by a reservation pod (in the
// reservation namespace, bound straight to the node, asking nvidia.com/gpu: 1). Once it runs and
// says which GPU it was given (its device annotation), each pod sharing that GPU is annotated
// with the device (gpuq.io/gpu-device, for NVIDIA_VISIBLE_DEVICES through the downward API) and
// the engine's GPU index (gpuq.io/gpu-slot, so a restart puts it back on the same share), then
// bound. The reservation pod is deleted when its last sharer ends.
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "binder/kubernetes/kube_state.hpp"

namespace gpuq::binder::k8s {

namespace json = boost::json;

namespace {

std::string dns_part(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? static_cast<char>(std::tolower(c)) : '-';
  return out.substr(0, 40);
}

json::object field_env(const char* name, const char* path) {
  return json::object{{"name", name}, {"valueFrom", {{"fieldRef", {{"fieldPath", path}}}}}};
}

}  // namespace

void KubernetesBinder::State::share(const std::shared_ptr<Binding>& b, std::size_t i) {
  const Binding::Pod& bp = b->pods[i];
  reserve(bp.node, bp.slot, bp.key, [this, b, i, slot = bp.slot](const std::string& device) {
    write([this, b, i, slot, device] {
      if (device.empty()) {
        settle(b, i, "the reservation pod holding its share of a GPU on " + b->pods[i].node + " did not run");
        return;
      }
      json::object patch{{"metadata", {{"annotations", {{kShareDeviceAnnotation, device}, {kShareSlotAnnotation, std::to_string(slot)}}}}}};
      Response r = client->request("PATCH", pod_path(b->pods[i].key), json::serialize(patch), "application/merge-patch+json");
      if (!r.ok()) {
        settle(b, i, "annotating pod " + b->pods[i].key + " with its GPU: " + describe(r));
        return;
      }
      bind_pod(b, i);
    });
  });
}

// Under mu: `sharer` takes its share of GPU `slot` on `node`; `go` gets the GPU's device once the
// reservation pod holding it runs ("" : it failed), under mu.
void KubernetesBinder::State::reserve(const std::string& node, int slot, const std::string& sharer,
                                      std::function<void(const std::string& device)> go) {
  const std::string rkey = node + "/" + std::to_string(slot);
  if (auto gone = releasing.find(rkey); gone != releasing.end()) {  // a new reservation pod waits for the old
    gone->second.push_back([this, node, slot, sharer, go] {
      std::lock_guard lock(mu);
      reserve(node, slot, sharer, go);
    });
    return;
  }
  Reservation& r = reservations[rkey];
  r.sharers.insert(sharer);
  share_of[sharer] = rkey;
  if (!r.device.empty()) return go(r.device);
  r.waiters.push_back(go);
  if (!r.pod.empty()) return;  // asked for already
  r.pod = "gpuq-share-" + dns_part(node) + "-" + std::to_string(slot) + "-" + std::to_string(++reservation_seq);
  json::object pod{
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata",
       {{"name", r.pod},
        {"namespace", config.reservation_namespace},
        {"labels", {{kReservationLabel, "true"}}},
        {"annotations", {{kReservationForAnnotation, rkey}}}}},
      {"spec",
       {{"nodeName", node},
        {"restartPolicy", "Always"},
        {"terminationGracePeriodSeconds", 0},
        {"tolerations", json::array{json::object{{"operator", "Exists"}}}},
        {"serviceAccountName", config.reservation_service_account},
        {"containers", json::array{json::object{
                           {"name", "reserve"},
                           {"image", config.reservation_image},
                           {"command", json::array{json::string(config.reservation_command)}},
                           {"env", json::array{field_env("POD_NAME", "metadata.name"),
                                               field_env("POD_NAMESPACE", "metadata.namespace"),
                                               json::object{{"name", "GPUQ_DEVICE_ANNOTATION"},
                                                            {"value", config.reservation_device_annotation}}}},
                           {"resources", {{"limits", {{kGpuResource, "1"}}}}}}}}}}};
  write([this, name = r.pod, body = json::serialize(pod), rkey] {
    Response made = client->request("POST", "/api/v1/namespaces/" + config.reservation_namespace + "/pods", body,
                                    "application/json", Retry::kUnsafe);
    if (made.ok()) return;
    (*errors)("reservation_failed");
    spdlog::warn("event=kubernetes_reservation_failed pod={} error=\"{}\"", name, describe(made));
    std::lock_guard lock(mu);
    auto it = reservations.find(rkey);
    if (it == reservations.end() || it->second.pod != name) return;
    it->second.failed = true;
    for (auto& w : std::exchange(it->second.waiters, {})) w("");
  });
}

void KubernetesBinder::State::unshare(const std::string& sharer) {
  auto s = share_of.find(sharer);
  if (s == share_of.end()) return;
  auto it = reservations.find(s->second);
  share_of.erase(s);
  if (it == reservations.end()) return;
  it->second.sharers.erase(sharer);
  if (!it->second.sharers.empty()) return;
  if (!it->second.pod.empty()) delete_reservation(it->second.pod, it->first);
  reservations.erase(it);
}

// Its GPU is free for other pods once the API has answered the DELETE (the reservation pod's
// grace period is 0: it is gone then, and the kubelet sees it go before any later binding).
void KubernetesBinder::State::delete_reservation(const std::string& name, const std::string& rkey) {
  if (!pool || halted || !leading) return;
  releasing[rkey];
  write([this, name, rkey] {
    Response r = client->request("DELETE", "/api/v1/namespaces/" + config.reservation_namespace + "/pods/" + name, "",
                                 "application/json", Retry::kSafe);
    if (!r.ok() && r.status != 404) spdlog::warn("event=kubernetes_reservation_delete_failed pod={} error=\"{}\"", name, describe(r));
    std::vector<std::function<void()>> waiting;
    {
      std::lock_guard lock(mu);
      auto it = releasing.find(rkey);
      if (it == releasing.end()) return;
      waiting = std::move(it->second);
      releasing.erase(it);
    }
    for (auto& w : waiting) w();
  });
}

// Binds a pod of whole GPUs once none of its GPUs is still held by a reservation pod being
// deleted. Under mu.
void KubernetesBinder::State::bind_after_release(const std::shared_ptr<Binding>& b, std::size_t i) {
  after_release(b->pods[i].node, b->pods[i].gpus, [this, b, i] { write([this, b, i] { bind_pod(b, i); }); });
}

// Under mu: `go` (under mu) once none of these GPUs of `node` is held by a reservation pod whose
// DELETE has not been answered yet.
void KubernetesBinder::State::after_release(const std::string& node, const std::vector<int>& gpus, std::function<void()> go) {
  for (int gpu : gpus)
    if (auto it = releasing.find(node + "/" + std::to_string(gpu)); it != releasing.end()) {
      it->second.push_back([this, node, gpus, go] {
        std::lock_guard lock(mu);
        after_release(node, gpus, go);
      });
      return;
    }
  go();
}

// A reservation pod's change: its device once it runs, its failure or its end.
bool KubernetesBinder::State::on_reservation(EventType type, const json::object& obj) {
  const json::value* meta = obj.if_contains("metadata");
  if (meta == nullptr || !meta->is_object()) return false;
  const json::object& m = meta->get_object();
  const json::value* ns = m.if_contains("namespace");
  if (ns == nullptr || !ns->is_string() || ns->get_string() != config.reservation_namespace) return false;
  const json::value* labels = m.if_contains("labels");
  const json::value* mark = labels && labels->is_object() ? labels->get_object().if_contains(kReservationLabel) : nullptr;
  if (mark == nullptr) return false;
  const std::string rkey = annotation_of(obj, kReservationForAnnotation);
  const std::string name = object_key(obj).substr(config.reservation_namespace.size() + 1);
  auto it = reservations.find(rkey);
  if (it == reservations.end()) {
    if (type == EventType::kDeleted || rkey.empty()) return true;
    it = reservations.emplace(rkey, Reservation{}).first;  // found at start: its sharers come with their jobs
    it->second.pod = name;
  }
  Reservation& r = it->second;
  if (r.pod != name) return true;  // an older one, being deleted
  auto pod = read_pod(obj);
  const bool ended = type == EventType::kDeleted || (pod && (pod->terminal() || pod->terminating));
  std::string device = annotation_of(obj, config.reservation_device_annotation);
  if (ended) {
    r.failed = true;
    r.device.clear();
  } else if (!device.empty() && r.device.empty()) {
    r.device = device;
  } else {
    return true;
  }
  for (auto& w : std::exchange(r.waiters, {})) w(r.device);
  if (ended && r.sharers.empty()) reservations.erase(it);
  return true;
}

}  // namespace gpuq::binder::k8s
