// Queues and Nodes, the services over the cluster model (Jobs and Watch: services.cpp; Admin:
// admin_service.cpp).
#include <type_traits>

#include "api/from_proto.hpp"
#include "api/service_util.hpp"
#include "api/to_proto.hpp"
#include "api/views.hpp"

namespace gpuq::api {

using namespace detail;

namespace {

// One page of a List of queues or nodes (`all` by name): those after the token's name, up to
// kListPageBytes (at least one); the response's next_page_token names the last one sent, empty
// when none is left. A queue or node at the limits (1024 labels, 1000 role members) is a few
// hundred KiB, so a few dozen of them would be over a client's 4 MiB in one reply.
template <class Status, class Response, class Add>
void fill_page(const std::vector<Status>& all, const std::string& after, Core& c, Response& resp, Add add) {
  std::size_t bytes = 0;
  const std::string* last = nullptr;
  for (const Status& item : all) {
    const std::string* name = nullptr;
    if constexpr (std::is_same_v<Status, daemon::QueueStatus>) name = &item.spec.name.value;
    else name = &item.spec.name;
    if (!after.empty() && *name <= after) continue;
    auto message = api::to_proto(item, c);
    const std::size_t size = message.ByteSizeLong();
    if (last != nullptr && bytes + size > kListPageBytes) {
      resp.set_next_page_token(*last);
      return;
    }
    bytes += size;
    *add(resp) = std::move(message);
    last = name;
  }
}

// An anonymous caller sees the queue summaries, not who holds which role in them.
bool hides_roles(const Access& a) { return a.checked && a.caller.anonymous; }
void without_roles(daemon::QueueStatus& q) {
  q.spec.submitters.reset();
  q.spec.viewers = {};
}

class QueuesService final : public v1::Queues::CallbackService {
 public:
  QueuesService(Loop& loop, const Readers& readers) : loop_(loop), readers_(readers) {}

  grpc::ServerUnaryReactor* Apply(grpc::CallbackServerContext* ctx, const v1::ApplyQueueRequest* req,
                                  v1::ApplyQueueResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Audited what{readers_.gate->of(*ctx), "queue.apply", req->spec().name()};
    if (refuse_if(loop_, reactor, what, readers_.gate->admin_only(what.access, "apply queue " + req->spec().name())))
      return reactor;
    auto spec = from_proto(req->spec(), *readers_.names);
    if (!spec) {
      refuse_if(loop_, reactor, what, failed(spec));
      return reactor;
    }
    in_audited_turn(loop_, reactor, what, [resp, spec = std::move(spec.value())](Core& core, Time, Audited&) {
      if (auto r = core.apply_queue(spec); !r) return Reply::error(failed(r));
      return answer_view(resp->mutable_queue(), [name = spec.name.value](Core& c) { return c.queue(name); });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetQueueRequest* req,
                                v1::GetQueueResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    // Open to anonymous callers; a credential sent along that does not hold is still refused.
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, access.refusal)) return reactor;
    in_turn(loop_, reactor, [req, resp, hide = hides_roles(access)](Core&, Time) {
      return answer_view(resp->mutable_queue(), [req, hide](Core& c) {
        auto q = c.queue(req->name());
        if (q && hide) without_roles(q.value());
        return q;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListQueuesRequest* req,
                                 v1::ListQueuesResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, access.refusal)) return reactor;  // as Get
    in_turn(loop_, reactor, [req, resp, hide = hides_roles(access)](Core&, Time) {
      return Reply::then([req, resp, hide](Core& c) {
        std::vector<daemon::QueueStatus> queues = c.queues();
        if (hide)
          for (auto& q : queues) without_roles(q);
        fill_page(queues, req->page_token(), c, *resp, [](auto& r) { return r.add_queues(); });
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* ctx, const v1::DeleteQueueRequest* req,
                                   v1::DeleteQueueResponse*) override {
    auto* reactor = ctx->DefaultReactor();
    const Audited what{readers_.gate->of(*ctx), "queue.delete", req->name()};
    if (refuse_if(loop_, reactor, what, readers_.gate->admin_only(what.access, "delete queue " + req->name())))
      return reactor;
    in_audited_turn(loop_, reactor, what, [req](Core& core, Time, Audited&) {
      if (auto r = core.delete_queue(req->name()); !r) return Reply::error(failed(r));
      return Reply::then([](Core&) { return grpc::Status::OK; });
    });
    return reactor;
  }

 private:
  Loop& loop_;
  const Readers& readers_;
};

class NodesService final : public v1::Nodes::CallbackService {
 public:
  NodesService(Loop& loop, const Readers& readers) : loop_(loop), readers_(readers) {}

  grpc::ServerUnaryReactor* Apply(grpc::CallbackServerContext* ctx, const v1::ApplyNodeRequest* req,
                                  v1::ApplyNodeResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Audited what{readers_.gate->of(*ctx), "node.apply", req->spec().name()};
    if (refuse_if(loop_, reactor, what, readers_.gate->admin_only(what.access, "apply node " + req->spec().name())))
      return reactor;
    // Read here: a node with too many labels is refused before anything of it reaches the engine.
    auto spec = from_proto(req->spec(), *readers_.names);
    if (!spec) {
      refuse_if(loop_, reactor, what, failed(spec));
      return reactor;
    }
    in_audited_turn(loop_, reactor, what, [resp, spec = std::move(spec.value())](Core& core, Time now, Audited&) {
      if (auto r = core.apply_node(spec, now); !r) return Reply::error(failed(r));
      return answer_view(resp->mutable_node(), [name = spec.name](Core& c) { return c.node(name); });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListNodesRequest* req,
                                 v1::ListNodesResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    if (finish_if(reactor, readers_.gate->known(readers_.gate->of(*ctx), "see nodes"))) return reactor;
    in_turn(loop_, reactor, [req, resp](Core&, Time) {
      return Reply::then([req, resp](Core& c) {
        fill_page(c.nodes(), req->page_token(), c, *resp, [](auto& r) { return r.add_nodes(); });
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Cordon(grpc::CallbackServerContext* ctx, const v1::NodeNameRequest* req,
                                   v1::NodeResponse* resp) override {
    return set_state(ctx, req, resp, NodeState::kCordoned);
  }
  grpc::ServerUnaryReactor* Uncordon(grpc::CallbackServerContext* ctx, const v1::NodeNameRequest* req,
                                     v1::NodeResponse* resp) override {
    return set_state(ctx, req, resp, NodeState::kReady);
  }
  grpc::ServerUnaryReactor* Drain(grpc::CallbackServerContext* ctx, const v1::NodeNameRequest* req,
                                  v1::NodeResponse* resp) override {
    return set_state(ctx, req, resp, NodeState::kDraining);
  }

 private:
  grpc::ServerUnaryReactor* set_state(grpc::CallbackServerContext* ctx, const v1::NodeNameRequest* req,
                                      v1::NodeResponse* resp, NodeState state) {
    auto* reactor = ctx->DefaultReactor();
    const char* verb = state == NodeState::kCordoned ? "cordon" : state == NodeState::kReady ? "uncordon" : "drain";
    const std::string action = std::string(verb) + " node " + req->name();
    const Audited what{readers_.gate->of(*ctx), std::string("node.") + verb, req->name()};
    if (refuse_if(loop_, reactor, what, readers_.gate->admin_only(what.access, action)))
      return reactor;
    in_audited_turn(loop_, reactor, what, [req, resp, state](Core& core, Time now, Audited&) {
      if (auto r = core.set_node_state(req->name(), state, now); !r) return Reply::error(failed(r));
      return answer_view(resp->mutable_node(), [req](Core& c) { return c.node(req->name()); });
    });
    return reactor;
  }

  Loop& loop_;
  const Readers& readers_;
};

}  // namespace


std::unique_ptr<v1::Queues::CallbackService> make_queues_service(daemon::Loop& loop, const Readers& readers) {
  return std::make_unique<QueuesService>(loop, readers);
}

std::unique_ptr<v1::Nodes::CallbackService> make_nodes_service(daemon::Loop& loop, const Readers& readers) {
  return std::make_unique<NodesService>(loop, readers);
}

}  // namespace gpuq::api
