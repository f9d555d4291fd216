#include "api/services.hpp"

#include "api/logs.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <unordered_map>

#include <spdlog/spdlog.h>

#include "api/from_proto.hpp"
#include "api/service_util.hpp"
#include "api/to_proto.hpp"
#include "api/views.hpp"

namespace gpuq::api {

grpc::Status to_status(ErrorCode code, const std::string& message) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return {grpc::StatusCode::INVALID_ARGUMENT, message};
    case ErrorCode::kNotFound: return {grpc::StatusCode::NOT_FOUND, message};
    case ErrorCode::kAlreadyExists: return {grpc::StatusCode::ALREADY_EXISTS, message};
    case ErrorCode::kFailedPrecondition:
    case ErrorCode::kRejected: return {grpc::StatusCode::FAILED_PRECONDITION, message};
    case ErrorCode::kResourceExhausted: return {grpc::StatusCode::RESOURCE_EXHAUSTED, message};
    case ErrorCode::kUnavailable: return {grpc::StatusCode::UNAVAILABLE, message};
    case ErrorCode::kPermissionDenied: return {grpc::StatusCode::PERMISSION_DENIED, message};
  }
  return {grpc::StatusCode::INTERNAL, message};
}

grpc::Status to_status(const Error& e) { return to_status(e.code, e.message); }

namespace {

using namespace detail;

// The cancelled jobs still stopping that `f` (without its states) lists, merged by number into
// `page`, a page read without CANCELLED that is cut to f.limit again. There are few (the engine
// still holds them), where reading the cancelled jobs to keep these would read every one ever
// cancelled.
grpc::Status merge_stopping(Core& c, const storage::JobFilter& f, std::vector<storage::ListEntry>& page) {
  const std::size_t read = page.size();
  for (const JobId& id : c.stopping_jobs()) {
    auto rec = c.store().job(id.value);
    if (!rec) return to_status(ErrorCode::kUnavailable, rec.error());
    if (!rec.value().has_value()) continue;
    storage::JobRecord& r = *rec.value();
    if (r.number <= f.after_number || (!f.queue.empty() && r.spec.queue.value != f.queue) ||
        (!f.owner.empty() && r.spec.owner != f.owner))
      continue;
    const std::uint64_t number = r.number;
    page.push_back(storage::ListEntry{std::move(r), {}, number});
  }
  if (page.size() == read) return grpc::Status::OK;
  std::sort(page.begin(), page.end(), [](const auto& a, const auto& b) { return a.job.number < b.job.number; });
  if (page.size() > f.limit) page.resize(f.limit);
  return grpc::Status::OK;
}


class JobsService final : public v1::Jobs::CallbackService {
 public:
  JobsService(Loop& loop, std::shared_ptr<WatchHub> hub, const Readers& readers)
      : loop_(loop), hub_(std::move(hub)), readers_(readers) {}

  grpc::ServerUnaryReactor* Submit(grpc::CallbackServerContext* ctx, const v1::SubmitJobRequest* req,
                                   v1::SubmitJobResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    // Read and checked here, on gRPC's thread: a bad request never reaches the engine thread.
    auto sub = from_proto(req->spec(), *readers_.names, *readers_.classes);
    if (!sub) {
      reactor->Finish(failed(sub));
      return reactor;
    }
    const Access access = readers_.gate->of(*ctx);
    const Audited what{access, "submit", sub.value().job.id.value.empty() ? "queue " + sub.value().job.queue.value
                                                                           : sub.value().job.id.value};
    if (refuse_if(loop_, reactor, what, readers_.gate->owner_for(access, sub.value().job.owner))) return reactor;
    in_audited_turn(loop_, reactor, what, [this, access, resp, sub = std::move(sub.value())](Core& core, Time now,
                                                                                              Audited& audited) mutable {
      // The queue's submitters first: a caller who may not submit learns nothing of its limits.
      if (const QueueSpec* q = core.queue_spec(sub.job.queue.value))
        if (auto st = readers_.gate->may_submit(access, *q); !st.ok()) return Reply::error(st);
      auto id = core.submit(std::move(sub), now);
      if (!id) return Reply::error(failed(id));
      audited.target = id.value();
      return answer_view(resp->mutable_job(), [id = id.value()](Core& c) { return c.job(id); });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Get(grpc::CallbackServerContext* ctx, const v1::GetJobRequest* req,
                                v1::GetJobResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, readers_.gate->known(access, "see jobs"))) return reactor;
    in_turn(loop_, reactor, [this, req, resp, access](Core&, Time) {
      // One lookup, at the end of the turn: the job as the turn leaves it, if the caller may see it.
      return Reply::then([this, req, resp, access](Core& c) { return shown_job(access, req->id(), c, *resp->mutable_job()); });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Explain(grpc::CallbackServerContext* ctx, const v1::ExplainJobRequest* req,
                                    v1::ExplainJobResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, readers_.gate->known(access, "see jobs"))) return reactor;
    in_turn(loop_, reactor, [this, req, resp, access](Core&, Time now) {
      // As Get: at the end of the turn, for a caller who may see the job.
      return Reply::then([this, req, resp, access, now](Core& c) {
        if (auto st = shown_job(access, req->id(), c, *resp->mutable_job()); !st.ok()) return st;
        auto why = c.explain(req->id());
        if (!why) return failed(why);
        *resp->mutable_explanation() = api::to_proto(why.value(), c.names(), now);
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* List(grpc::CallbackServerContext* ctx, const v1::ListJobsRequest* req,
                                 v1::ListJobsResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    storage::JobFilter filter;
    filter.queue = req->queue();
    filter.owner = req->owner();
    filter.fold = req->fold_arrays();
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, readers_.gate->known(access, "see jobs"))) return reactor;
    for (int s : req->states())
      filter.states.push_back(api::from_proto(static_cast<v1::JobState>(s)).value_or(JobState::kPending));
    // RUNNING without CANCELLED: the cancelled jobs still stopping are listed too (merge_stopping).
    const auto asks = [&](JobState s) { return std::find(filter.states.begin(), filter.states.end(), s) != filter.states.end(); };
    const bool with_stopping = asks(JobState::kRunning) && !asks(JobState::kCancelled);
    if (req->page_size() < 0 || req->page_size() > 1000) {
      reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                       "page_size: " + std::to_string(req->page_size()) + " is not allowed; use 0 to 1000"});
      return reactor;
    }
    filter.limit = req->page_size() == 0 ? 100 : static_cast<std::size_t>(req->page_size());
    if (!req->page_token().empty()) {
      char* end = nullptr;
      filter.after_number = std::strtoull(req->page_token().c_str(), &end, 10);
      if (end == nullptr || *end != '\0') {
        reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                         "page_token: \"" + req->page_token() + "\" is not a token this server gave"});
        return reactor;
      }
    }
    in_turn(loop_, reactor, [this, access, filter, resp, with_stopping](Core& core, Time) mutable {
      if (!filter.queue.empty())
        if (auto q = core.queue(filter.queue); !q) return Reply::error(failed(q));  // NOT_FOUND, named
      // A viewer of the listed queue gets all of its jobs; anyone else their own.
      const QueueSpec* queue = filter.queue.empty() ? nullptr : core.queue_spec(filter.queue);
      if (auto st = readers_.gate->list_owner(access, filter.owner, queue); !st.ok()) return Reply::error(st);
      return Reply::then([this, access, filter, resp, with_stopping](Core& c) {
        storage::JobFilter f = filter;
        f.limit = filter.limit + 1;  // one more: is there a next page?
        auto read = c.store().list(f);
        if (!read) return to_status(ErrorCode::kUnavailable, read.error());
        auto jobs = std::make_optional(std::move(read).value());
        if (with_stopping)
          if (auto st = merge_stopping(c, f, jobs.value()); !st.ok()) return st;
        // A page ends at page_size jobs or kListPageBytes, whichever comes first (at least one
        // job a page), so that a reply stays within the 4 MiB a gRPC client takes by default
        // whatever the jobs hold; the token names the last job sent.
        const std::size_t n = std::min(jobs->size(), filter.limit);
        std::size_t bytes = 0, sent = 0;
        for (; sent < n; ++sent) {
          // A folded run is as its row has it: unchanged since submission (Store::list).
          const storage::ListEntry& entry = (*jobs)[sent];
          const storage::JobRecord& listed = entry.members.empty() ? c.listed(entry.job) : entry.job;
          v1::Job job = api::to_proto(listed, c);
          if (!entry.members.empty()) job.set_array_indices(entry.members.text());
          if (!readers_.gate->may_see_env(access, listed.spec.owner)) {
            job.mutable_spec()->clear_env();
            job.mutable_spec()->clear_notify();  // a webhook URL may hold a token
          }
          const std::size_t size = job.ByteSizeLong();
          if (bytes > 0 && bytes + size > kListPageBytes) break;
          bytes += size;
          *resp->add_jobs() = std::move(job);
        }
        if (sent < jobs->size()) resp->set_next_page_token(std::to_string((*jobs)[sent - 1].last_number));
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Cancel(grpc::CallbackServerContext* ctx, const v1::CancelJobRequest* req,
                                   v1::CancelJobResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    // Refused whether the job exists or not: an anonymous caller learns no ids.
    const Audited what{access, req->force() ? "cancel --force" : "cancel", req->id()};
    if (refuse_if(loop_, reactor, what, readers_.gate->known(access, "cancel a job"))) return reactor;
    in_audited_turn(loop_, reactor, what, [this, req, resp, access](Core& core, Time now, Audited&) {
      const std::string shown = shown_for(core, req->id());
      if (auto job = core.job(shown))
        if (auto st = readers_.gate->may_change_job(access, "cancel", req->id(), job.value().spec.owner); !st.ok())
          return Reply::error(st);
      if (auto r = core.cancel(req->id(), now, req->force()); !r) return Reply::error(failed(r));
      return answer_view(resp->mutable_job(), [shown](Core& c) { return c.job(shown); });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Hold(grpc::CallbackServerContext* ctx, const v1::HoldJobRequest* req,
                                 v1::HoldJobResponse* resp) override {
    return hold_or_release(ctx, req->id(), resp->mutable_job(), true);
  }
  grpc::ServerUnaryReactor* Release(grpc::CallbackServerContext* ctx, const v1::ReleaseJobRequest* req,
                                    v1::ReleaseJobResponse* resp) override {
    return hold_or_release(ctx, req->id(), resp->mutable_job(), false);
  }

  grpc::ServerUnaryReactor* Update(grpc::CallbackServerContext* ctx, const v1::UpdateJobRequest* req,
                                   v1::UpdateJobResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    const Audited what{access, "update", req->id()};
    if (refuse_if(loop_, reactor, what, readers_.gate->known(access, "update a job"))) return reactor;
    in_audited_turn(loop_, reactor, what, [this, req, resp, access](Core& core, Time now, Audited&) {
      if (auto job = core.job(req->id()))
        if (auto st = readers_.gate->may_change_job(access, "update", req->id(), job.value().spec.owner); !st.ok())
          return Reply::error(st);
      Core::JobChange change;
      if (req->has_priority()) change.priority = req->priority().substr(0, 256);
      if (req->has_max_runtime_seconds()) change.max_runtime = req->max_runtime_seconds();
      if (req->has_queue()) {
        change.queue = req->queue().substr(0, 256);
        // Moving to a queue is submitting to it: its submitters (and admins) only.
        if (const QueueSpec* q = core.queue_spec(*change.queue))
          if (auto st = readers_.gate->may_submit(access, *q); !st.ok()) return Reply::error(st);
      }
      const std::string by = access.caller.user.empty() ? std::string("an anonymous caller") : access.caller.user;
      if (auto r = core.update(req->id(), change, now, by, access.admin || !access.checked); !r) return Reply::error(failed(r));
      return answer_view(resp->mutable_job(), [req](Core& c) { return c.job(req->id()); });
    });
    return reactor;
  }

  // Jobs.Input: its owner or an admin, as Cancel (not audited: keystrokes).
  grpc::ServerUnaryReactor* Input(grpc::CallbackServerContext* ctx, const v1::InputRequest* req,
                                  v1::InputResponse*) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    if (finish_if(reactor, readers_.gate->known(access, "type into a job"))) return reactor;
    reactor->Finish(send_input(loop_, *req, [this, access, id = req->id()](const storage::JobRecord& job) {
      return readers_.gate->may_change_job(access, "type into", id, job.spec.owner);
    }));
    return reactor;
  }

  grpc::ServerWriteReactor<v1::JobEvent>* Watch(grpc::CallbackServerContext* ctx,
                                                const v1::WatchJobsRequest* req) override;
  grpc::ServerWriteReactor<v1::LogChunk>* Logs(grpc::CallbackServerContext* ctx, const v1::LogsRequest* req) override {
    const Access access = readers_.gate->of(*ctx);
    if (auto st = readers_.gate->known(access, "read job output"); !st.ok()) return refused<v1::LogChunk>(st);
    return start_log_stream(loop_, *req, [this, access, id = req->id()](const storage::JobRecord& job) {
      std::optional<QueueSpec> queue;  // its viewers may read it too
      loop_.run_sync([&](Core& c) {
        if (const QueueSpec* q = c.queue_spec(job.spec.queue.value)) queue = *q;
      });
      return readers_.gate->may_see_job(access, id, job.spec.owner, queue ? &*queue : nullptr);
    });
  }

 private:
  // Jobs.Hold and Jobs.Release: the job's owner or an admin, as Cancel; audited.
  grpc::ServerUnaryReactor* hold_or_release(grpc::CallbackServerContext* ctx, const std::string& id, v1::Job* out,
                                            bool hold) {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    const char* action = hold ? "hold" : "release";
    const Audited what{access, action, id};
    if (refuse_if(loop_, reactor, what, readers_.gate->known(access, std::string(action) + " a job"))) return reactor;
    in_audited_turn(loop_, reactor, what, [this, id, out, access, action, hold](Core& core, Time now, Audited&) {
      const std::string shown = shown_for(core, id);
      if (auto job = core.job(shown))
        if (auto st = readers_.gate->may_change_job(access, action, id, job.value().spec.owner); !st.ok())
          return Reply::error(st);
      const std::string by = access.caller.user.empty() ? std::string("an anonymous caller") : access.caller.user;
      if (auto r = hold ? core.hold(id, now, by) : core.release(id, now, by); !r) return Reply::error(failed(r));
      return answer_view(out, [shown](Core& c) { return c.job(shown); });
    });
    return reactor;
  }

  // The job a call on `id` is checked against and answers with: the job, or for an array's id
  // its first member (every member is the same owner's; the call acts on all of them).
  static std::string shown_for(Core& core, const std::string& id) {
    if (auto first = core.first_member(id); first && !core.job(id)) return *first;
    return id;
  }

  // The job as `access` may see it (a viewer of the queue: without its environment, where tokens
  // live), or why not.
  grpc::Status shown_job(const Access& access, const std::string& id, Core& c, v1::Job& out) const {
    auto job = c.job(id);
    if (!job) return failed(job);
    const std::string& owner = job.value().spec.owner;
    if (auto st = readers_.gate->may_see_job(access, id, owner, c.queue_spec(job.value().spec.queue.value)); !st.ok())
      return st;
    out = api::to_proto(job.value(), c);
    // Where the binder names its pods (Kubernetes: namespace/name), each placement says which.
    const std::vector<std::string> pods = c.binder().pod_names(JobId(id));
    for (int i = 0; i < out.placement_size() && i < static_cast<int>(pods.size()); ++i)
      out.mutable_placement(i)->set_pod(pods[static_cast<std::size_t>(i)]);
    if (!readers_.gate->may_see_env(access, owner)) {
      out.mutable_spec()->clear_env();
      out.mutable_spec()->clear_notify();  // a webhook URL may hold a token
    }
    return grpc::Status::OK;
  }

  Loop& loop_;
  std::shared_ptr<WatchHub> hub_;
  const Readers& readers_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Watch: history from the file, then live events as turns commit them.

struct WatchState {
  std::mutex mu;
  grpc::ServerWriteReactor<v1::JobEvent>* stream = nullptr;  // null once done
  std::deque<v1::JobEvent> queue;
  bool writing = false;
  bool finished = false;
  std::string queue_filter;
  std::string job_filter;
  std::string owner_filter;  // a non-admin through the socket: its own jobs' events only
  // The bearer token the watcher is known by: once revoked or expired, the stream ends at the
  // next event (a watch is one call, which may run for days).
  std::string token_id;
  const TokenTable* tokens = nullptr;
  // The last event queued: history is read from the file and live events come as the Core
  // takes commits back, so an event committed in between can come both ways; it is sent once.
  std::uint64_t last_seq = 0;

  bool wants(const storage::EventRecord& e) const {
    return (queue_filter.empty() || e.queue == queue_filter) && (job_filter.empty() || e.job == job_filter) &&
           (owner_filter.empty() || e.owner == owner_filter);
  }
  // Why the watcher's token no longer holds ("": it does, or there is none).
  std::string token_gone() const {
    if (token_id.empty() || tokens == nullptr) return "";
    const auto t = tokens->find_id(token_id);
    if (!t || t->revoked_at > 0) return "bearer token " + token_id + " was revoked: the watch ends";
    if (std::time(nullptr) >= t->expires_at) return "bearer token " + token_id + " expired: the watch ends";
    return "";
  }
  // With mu held.
  void write_next() {
    if (stream == nullptr || writing || finished || queue.empty()) return;
    writing = true;
    stream->StartWrite(&queue.front());
  }
  void finish(const grpc::Status& s) {
    if (stream == nullptr || finished) return;
    finished = true;
    stream->Finish(s);
  }
};

class WatchHub {
 public:
  void add(std::shared_ptr<WatchState> s) {
    std::lock_guard lock(mu_);
    states_.push_back(std::move(s));
  }
  void publish(const storage::EventRecord& e) {
    std::lock_guard lock(mu_);
    std::erase_if(states_, [&](const std::shared_ptr<WatchState>& s) {
      std::lock_guard l(s->mu);
      if (s->stream == nullptr || s->finished) return true;
      if (e.seq <= s->last_seq) return false;
      if (const std::string why = s->token_gone(); !why.empty()) {
        s->finish({grpc::StatusCode::UNAUTHENTICATED, why});
        return true;
      }
      s->last_seq = e.seq;
      if (s->wants(e)) {
        s->queue.push_back(api::to_proto(e));
        s->write_next();
      }
      return false;
    });
  }
  bool watching() {
    std::lock_guard lock(mu_);
    return !states_.empty();
  }
  void close_all() {  // gpuqd is stopping: the client says why its watch ended
    std::lock_guard lock(mu_);
    for (auto& s : states_) {
      std::lock_guard l(s->mu);
      s->finish({grpc::StatusCode::UNAVAILABLE, "gpuqd is stopping"});
    }
    states_.clear();
  }

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<WatchState>> states_;
};

namespace {

class WatchStream final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  explicit WatchStream(std::shared_ptr<WatchState> s) : s_(std::move(s)) { s_->stream = this; }
  void OnWriteDone(bool ok) override {
    std::lock_guard lock(s_->mu);
    s_->writing = false;
    if (!ok) {
      s_->finish(grpc::Status::CANCELLED);
      return;
    }
    s_->queue.pop_front();
    s_->write_next();
  }
  void OnCancel() override {
    std::lock_guard lock(s_->mu);
    s_->finish(grpc::Status::CANCELLED);
  }
  void OnDone() override {
    {
      std::lock_guard lock(s_->mu);
      s_->stream = nullptr;
    }
    delete this;
  }

 private:
  std::shared_ptr<WatchState> s_;
};

// A replayed event's job owner (events on disk do not name it), looked up once per job.
std::string owner_of(Core& core, const std::string& job, std::unordered_map<std::string, std::string>& known) {
  auto [it, fresh] = known.try_emplace(job);
  if (fresh)
    if (auto rec = core.store().job(job); rec && rec.value()) it->second = rec.value()->spec.owner;
  return it->second;
}

grpc::ServerWriteReactor<v1::JobEvent>* JobsService::Watch(grpc::CallbackServerContext* ctx,
                                                           const v1::WatchJobsRequest* req) {
  const Access access = readers_.gate->of(*ctx);
  if (auto st = readers_.gate->known(access, "watch jobs"); !st.ok()) return refused<v1::JobEvent>(st);
  if (req->from_seq() > static_cast<std::uint64_t>(INT64_MAX))
    return refused<v1::JobEvent>({grpc::StatusCode::INVALID_ARGUMENT,
                                  "from_seq: " + std::to_string(req->from_seq()) + " is not allowed; use 0 to " +
                                      std::to_string(INT64_MAX)});
  auto state = std::make_shared<WatchState>();
  if (auto st = readers_.gate->list_owner(access, state->owner_filter); !st.ok()) return refused<v1::JobEvent>(st);
  state->queue_filter = req->queue();
  state->job_filter = req->job_id();
  state->token_id = access.token_id;
  state->tokens = readers_.tokens;
  auto* stream = new WatchStream(state);
  const std::uint64_t from = req->from_seq();
  loop_.post([state, hub = hub_, from, gate = readers_.gate, access](Core& core, Time) -> Loop::Done {
    // History and registration in one step of the engine thread: nothing is missed or doubled.
    std::uint64_t after = from;
    std::unordered_map<std::string, std::string> owners;  // job -> owner, for a replay filtered by owner
    std::lock_guard lock(state->mu);
    // A viewer of the watched queue sees every job's events there, not only its own.
    if (!state->queue_filter.empty() && gate->views(access, core.queue_spec(state->queue_filter)))
      state->owner_filter.clear();
    state->last_seq = from;
    while (true) {
      auto batch = core.store().events_after(after, 10'000);
      if (!batch) {
        state->finish(to_status(ErrorCode::kUnavailable, batch.error()));
        return nullptr;
      }
      for (storage::EventRecord e : *batch) {
        if (!state->owner_filter.empty()) e.owner = owner_of(core, e.job, owners);
        if (state->wants(e)) state->queue.push_back(api::to_proto(e));
      }
      if (!batch->empty()) state->last_seq = batch->back().seq;
      if (batch->size() < 10'000) break;
      after = batch->back().seq;
    }
    state->write_next();
    hub->add(state);
    return nullptr;
  });
  return stream;
}

}  // namespace

Services::Services(daemon::Loop& loop)
    : loop_(loop),
      hub_(std::make_shared<WatchHub>()),
      jobs_(std::make_unique<JobsService>(loop, hub_, readers_)),
      queues_(make_queues_service(loop, readers_)),
      nodes_(make_nodes_service(loop, readers_)),
      admin_(make_admin_service(loop, readers_)) {
  readers_.gate = &gate_;
  readers_.tokens = &tokens_;
}

Services::~Services() = default;

void Services::register_with(grpc::ServerBuilder& builder) {
  builder.RegisterService(jobs_.get());
  builder.RegisterService(queues_.get());
  builder.RegisterService(nodes_.get());
  builder.RegisterService(admin_.get());
}

void Services::attach(daemon::Core& core) {
  readers_.names = &core.names();
  readers_.classes = &core.priority_classes();
  readers_.store = &core.store();
  readers_.prices = &core.prices();
  core.set_event_sink([hub = hub_](const storage::EventRecord& e) { hub->publish(e); },
                      [hub = hub_] { return hub->watching(); });
}

void Services::guard(const auth::UnixListener* socket, auth::Admins admins, bool trust_tcp) {
  gate_ = Gate(socket, std::move(admins), trust_tcp);
  gate_.identify_tcp(&tokens_, client_certs_);
}

void Services::identify_tcp(std::vector<storage::TokenRecord> tokens, bool client_certs) {
  tokens_.reset(std::move(tokens));
  client_certs_ = client_certs;
  gate_.identify_tcp(&tokens_, client_certs_);
}

void Services::close() { hub_->close_all(); }

}  // namespace gpuq::api

namespace gpuq::daemon {

std::unique_ptr<Frontend> make_frontend(Loop& loop) { return std::make_unique<api::Services>(loop); }

}  // namespace gpuq::daemon
