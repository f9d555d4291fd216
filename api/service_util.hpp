#pragma once
// What the gRPC services share (api/services.cpp, api/admin_service.cpp): running a request's
// work in a turn on the engine thread and answering once it is on disk, replies looked up at the
// end of the turn, and error statuses. Internal to api/.
#include <functional>
#include <string>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include "api/services.hpp"
#include "api/to_proto.hpp"
#include "api/views.hpp"
#include "daemon/core.hpp"
#include "daemon/loop.hpp"

namespace gpuq::api {

// The Admin service (api/admin_service.cpp).
std::unique_ptr<v1::Admin::CallbackService> make_admin_service(daemon::Loop& loop, const Readers& readers);
// Queues and Nodes (cluster_services.cpp).
std::unique_ptr<v1::Queues::CallbackService> make_queues_service(daemon::Loop& loop, const Readers& readers);
std::unique_ptr<v1::Nodes::CallbackService> make_nodes_service(daemon::Loop& loop, const Readers& readers);

namespace detail {

using daemon::Core;
using daemon::Loop;

inline const char* code_name(grpc::StatusCode c) {
  switch (c) {
    case grpc::StatusCode::INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case grpc::StatusCode::NOT_FOUND: return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS: return "ALREADY_EXISTS";
    case grpc::StatusCode::FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case grpc::StatusCode::RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::UNAVAILABLE: return "UNAVAILABLE";
    case grpc::StatusCode::PERMISSION_DENIED: return "PERMISSION_DENIED";
    case grpc::StatusCode::UNAUTHENTICATED: return "UNAUTHENTICATED";
    default: return "OTHER";
  }
}

template <class T>
grpc::Status failed(const Result<T>& r) {
  grpc::Status s = to_status(r.code(), r.error());
  spdlog::warn("event=request_error code={} error=\"{}\"", code_name(s.error_code()), r.error());
  return s;
}

inline grpc::Status unavailable(const Core::TurnResult& t) {
  return {grpc::StatusCode::UNAVAILABLE, "the state could not be written (" + t.error +
                                             "); nothing was changed; retry"};
}

// Runs `work` on the engine thread; the reply's `fill` runs at the end of the turn (the state
// the turn's write holds) and the reply is sent once that write is on disk. Errors from `work`
// finish at once (nothing changed).
template <class Work>
void in_turn(Loop& loop, grpc::ServerUnaryReactor* reactor, Work work) {
  loop.post([reactor, work = std::move(work)](Core& core, Time now) mutable -> Loop::Done {
    auto reply = work(core, now);  // std::function<grpc::Status(Core&)> or an error status
    if (!reply.ok()) {
      reactor->Finish(reply.status);
      return nullptr;
    }
    return [reactor, fill = std::move(reply.fill)](Core& c) -> Loop::Send {
      return [reactor, status = fill(c)](const Core::TurnResult& t) {
        reactor->Finish(t.ok ? status : unavailable(t));
      };
    };
  });
}

struct Reply {
  grpc::Status status = grpc::Status::OK;
  std::function<grpc::Status(Core&)> fill;
  bool ok() const { return status.ok(); }
  static Reply error(grpc::Status s) { return Reply{std::move(s), nullptr}; }
  static Reply then(std::function<grpc::Status(Core&)> f) { return Reply{grpc::Status::OK, std::move(f)}; }
};

// A reply that is one object looked up at the end of the turn: `lookup(core)` gives a Result
// whose value goes to `*out` (or whose error is the reply).
template <class M, class Lookup>
Reply answer(M* out, Lookup lookup) {
  return Reply::then([out, lookup = std::move(lookup)](Core& c) {
    auto found = lookup(c);
    if (!found) return failed(found);
    *out = std::move(found.value());
    return grpc::Status::OK;
  });
}

// A server stream refused before it starts: finishes with the status, sends nothing.
template <class T>
class RefusedStream final : public grpc::ServerWriteReactor<T> {
 public:
  explicit RefusedStream(grpc::Status st) { this->Finish(std::move(st)); }
  void OnDone() override { delete this; }
};

template <class T>
grpc::ServerWriteReactor<T>* refused(grpc::Status st) {
  return new RefusedStream<T>(std::move(st));
}

// The most a List reply's items may take, serialized: half of gRPC's default 4 MiB receive
// limit. A page holds at least one item, and one is far smaller than that (spec/limits.hpp).
constexpr std::size_t kListPageBytes = 2u << 20;

// Finishes a unary call with `st` when it is an error: `if (finish_if(reactor, st)) return reactor;`.
inline bool finish_if(grpc::ServerUnaryReactor* reactor, const grpc::Status& st) {
  if (st.ok()) return false;
  reactor->Finish(st);
  return true;
}

// ---------------------------------------------------------------------------------------------
// The audit log (docs/tasks/tenants-and-security.md, Audit): every call that changes or tries to change the state.

struct Audited {
  Access access;
  std::string action;  // "submit", "cancel", "queue.apply", "node.cordon", "backup.start", ...
  std::string target;  // the job, queue, node or token named
};

inline storage::AuditRecord audit_record(const Audited& what, const grpc::Status& st) {
  storage::AuditRecord r;
  r.user = what.access.caller.user;
  r.origin = what.access.caller.from;
  r.action = what.action;
  r.target = what.target;
  r.result = st.ok() ? std::string("OK") : std::string(code_name(st.error_code())) + ": " + st.error_message();
  return r;
}

// The outcome of an audited call that never reaches a turn (refused before, or not a turn's
// work): written with the next turn. An anonymous caller's refusals are logged only (spdlog):
// they would let anyone grow the state file for free.
inline void audit_later(Loop& loop, const Audited& what, const grpc::Status& st) {
  if (what.access.caller.anonymous && !st.ok()) return;
  loop.post([record = audit_record(what, st)](Core& core, Time now) mutable -> Loop::Done {
    core.audit(std::move(record), now);
    return nullptr;
  });
}

// finish_if for an audited call: a refusal goes in the audit log too.
inline bool refuse_if(Loop& loop, grpc::ServerUnaryReactor* reactor, const Audited& what, const grpc::Status& st) {
  if (st.ok()) return false;
  audit_later(loop, what, st);
  reactor->Finish(st);
  return true;
}

// in_turn for a call that changes the state: its outcome goes in the audit log, in the turn's
// transaction (a change and its record are on disk together, or neither). `work(core, now,
// what)` may name the target once it knows it (a submitted job's id).
template <class Work>
void in_audited_turn(Loop& loop, grpc::ServerUnaryReactor* reactor, Audited what, Work work) {
  in_turn(loop, reactor, [what = std::move(what), work = std::move(work)](Core& core, Time now) mutable {
    Reply reply = work(core, now, what);
    if (!(what.access.caller.anonymous && !reply.ok())) core.audit(audit_record(what, reply.status), now);
    return reply;
  });
}

// ---------------------------------------------------------------------------------------------

// A job record, a queue's or a node's status looked up at the end of the turn, as the API shows
// it (api/views.hpp).
template <class M, class Lookup>
Reply answer_view(M* out, Lookup lookup) {
  return answer(out, [lookup = std::move(lookup)](Core& c) -> Result<M> {
    auto found = lookup(c);
    if (!found) return Error{found.error(), found.code()};
    return api::to_proto(found.value(), c);
  });
}

}  // namespace detail
}  // namespace gpuq::api
