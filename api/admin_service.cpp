// The Admin service: a consistent copy of the state file (Backup), accounting over a period
// (Usage: api/usage.cpp), bearer tokens (CreateToken, ListTokens, RevokeToken).
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "api/service_util.hpp"
#include "api/usage.hpp"
#include "auth/tokens.hpp"

namespace gpuq::api {

using namespace detail;

namespace {

// Backup: a consistent copy made through the store's own connection on a thread of its own (the
// engine thread keeps serving), then streamed from that file in 1 MiB chunks, one in memory at a
// time; the file is unlinked once open.
class BackupStream final : public grpc::ServerWriteReactor<v1::BackupChunk> {
 public:
  explicit BackupStream(storage::Store& store) {
    std::thread([this, &store] { produce(store); }).detach();
  }
  void OnWriteDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status::CANCELLED);
      return;
    }
    next();
  }
  void OnDone() override { delete this; }

 private:
  void produce(storage::Store& store) {
    static std::atomic<std::uint64_t> counter{0};
    const auto path = std::filesystem::temp_directory_path() /
                      ("gpuq-backup-" + std::to_string(::getpid()) + "-" + std::to_string(++counter) + ".db");
    auto r = store.backup_to(path.string());
    if (!r) {
      Finish(to_status(ErrorCode::kUnavailable, "backup failed: " + r.error()));
      return;
    }
    std::error_code ec;
    total_ = std::filesystem::file_size(path, ec);
    in_.open(path, std::ios::binary);
    std::filesystem::remove(path, ec);
    if (!in_) {
      Finish(to_status(ErrorCode::kUnavailable, "backup failed: cannot read the copy " + path.string()));
      return;
    }
    next();
  }
  void next() {
    constexpr std::size_t kChunk = 1 << 20;
    std::string data(kChunk, '\0');
    in_.read(data.data(), static_cast<std::streamsize>(kChunk));
    data.resize(static_cast<std::size_t>(in_.gcount()));
    if (data.empty() && !first_) {
      Finish(grpc::Status::OK);
      return;
    }
    chunk_.Clear();
    if (first_) chunk_.set_total_bytes(total_);  // the first chunk, even of an empty copy
    first_ = false;
    chunk_.set_data(std::move(data));
    StartWrite(&chunk_);
  }

  std::ifstream in_;
  std::uint64_t total_ = 0;
  bool first_ = true;
  v1::BackupChunk chunk_;
};

void token_to_proto(const storage::TokenRecord& t, v1::Token* out) {
  out->set_id(t.id);
  out->set_user(t.user);
  out->set_note(t.note);
  out->set_created_by(t.created_by);
  out->set_created_at(t.created_at);
  out->set_expires_at(t.expires_at);
  out->set_revoked_at(t.revoked_at);
}

// A created or revoked token is written in its turn and put in the table (so calls may use it,
// or are refused it) once that write is on disk, before the reply goes out.
// `ttl` > 0: a new token, created now and expiring `ttl` seconds later; 0: `rec` revoked now.
// The audit record goes in the same turn.
void put_token(Loop& loop, TokenTable& tokens, grpc::ServerUnaryReactor* reactor, const Audited& what,
               storage::TokenRecord rec, Time ttl, std::function<void(const storage::TokenRecord&)> fill) {
  const std::string by = what.access.caller.anonymous ? what.access.caller.from : what.access.caller.user;
  loop.post([&tokens, reactor, record = audit_record(what, grpc::Status::OK), rec = std::move(rec), ttl, by,
             fill = std::move(fill)](Core& core, Time now) mutable -> Loop::Done {
    if (ttl > 0) {
      rec.created_at = now;
      rec.expires_at = now + ttl;
    } else {
      rec.revoked_at = now;
    }
    core.put_token(rec);
    core.audit(std::move(record), now);
    return [&tokens, reactor, rec, by, fill](Core&) -> Loop::Send {
      return [&tokens, reactor, rec, by, fill](const Core::TurnResult& t) {
        if (!t.ok) {
          reactor->Finish(unavailable(t));
          return;
        }
        tokens.put(rec);
        fill(rec);
        spdlog::info("event=token_{} id={} user={} by={}", rec.revoked_at > 0 ? "revoked" : "created", rec.id, rec.user,
                     by);
        reactor->Finish(grpc::Status::OK);
      };
    };
  });
}

class AdminService final : public v1::Admin::CallbackService {
 public:
  AdminService(Loop& loop, const Readers& readers) : loop_(loop), readers_(readers) {}

  grpc::ServerWriteReactor<v1::BackupChunk>* Backup(grpc::CallbackServerContext* ctx,
                                                    const v1::BackupRequest*) override {
    const Audited what{readers_.gate->of(*ctx), "backup.start", ""};
    const grpc::Status allowed = readers_.gate->admin_only(what.access, "take a backup");
    audit_later(loop_, what, allowed);  // a copy of everything: who took one is worth keeping
    if (!allowed.ok()) return refused<v1::BackupChunk>(allowed);
    storage::Store* store = nullptr;
    loop_.run_sync([&](Core& c) { store = &c.store(); });
    return new BackupStream(*store);
  }

  grpc::ServerUnaryReactor* Audit(grpc::CallbackServerContext* ctx, const v1::AuditRequest* req,
                                  v1::AuditResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    if (finish_if(reactor, readers_.gate->admin_only(readers_.gate->of(*ctx), "read the audit log"))) return reactor;
    if (req->page_size() < 0 || req->page_size() > 1000 || req->since() < 0) {
      reactor->Finish({grpc::StatusCode::INVALID_ARGUMENT,
                       req->since() < 0 ? "since: " + std::to_string(req->since()) + " is before 1970; use 0 or more"
                                        : "page_size: " + std::to_string(req->page_size()) +
                                              " is not allowed; use 0 to 1000"});
      return reactor;
    }
    storage::AuditFilter filter;
    filter.user = req->user();
    filter.since = req->since();
    filter.before_seq = req->before_seq();
    filter.limit = req->page_size() == 0 ? 100 : static_cast<std::size_t>(req->page_size());
    in_turn(loop_, reactor, [resp, filter](Core&, Time) {
      return Reply::then([resp, filter](Core& c) {
        storage::AuditFilter f = filter;
        f.limit = filter.limit + 1;  // one more: is there a next page?
        auto page = c.store().audit(f);
        if (!page) return to_status(ErrorCode::kUnavailable, page.error());
        for (std::size_t i = 0; i < page->size() && i < filter.limit; ++i) {
          const storage::AuditRecord& a = (*page)[i];
          auto* e = resp->add_entries();
          e->set_seq(a.seq);
          e->set_at(a.at);
          e->set_user(a.user);
          e->set_origin(a.origin);
          e->set_action(a.action);
          e->set_target(a.target);
          e->set_result(a.result);
        }
        if (page->size() > filter.limit) resp->set_next_before_seq((*page)[filter.limit - 1].seq);
        return grpc::Status::OK;
      });
    });
    return reactor;
  }

  grpc::ServerUnaryReactor* Usage(grpc::CallbackServerContext* ctx, const v1::UsageRequest* req,
                                  v1::UsageResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    // Not a turn: the read runs here, on its own connection (api/usage.hpp).
    reactor->Finish(usage_page(loop_, readers_, readers_.gate->of(*ctx), *req, *resp));
    return reactor;
  }

  grpc::ServerUnaryReactor* CreateToken(grpc::CallbackServerContext* ctx, const v1::CreateTokenRequest* req,
                                        v1::CreateTokenResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    Audited what{access, "token.create", "user " + req->user()};
    if (refuse_if(loop_, reactor, what, readers_.gate->admin_only(access, "create a token"))) return reactor;
    constexpr std::int64_t kMaxTtl = 3650LL * 86400;
    std::string bad = bad_token_user(req->user());
    if (bad.empty()) bad = bad_token_note(req->note());
    if (bad.empty() && (req->ttl_seconds() < 1 || req->ttl_seconds() > kMaxTtl))
      bad = "ttl_seconds: " + std::to_string(req->ttl_seconds()) + " is not allowed; use 1 s to 3650 days";
    if (refuse_if(loop_, reactor, what,
                  bad.empty() ? grpc::Status::OK : grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, bad)))
      return reactor;
    auto made = auth::new_token();
    if (!made && refuse_if(loop_, reactor, what, failed(made))) return reactor;
    storage::TokenRecord rec;
    rec.id = made.value().id;
    rec.hash = made.value().hash;
    rec.user = req->user();
    rec.note = req->note();
    rec.created_by = access.caller.anonymous ? access.caller.from : access.caller.user;
    what.target = "token " + rec.id + " of user " + rec.user;
    put_token(loop_, *readers_.tokens, reactor, what, std::move(rec), req->ttl_seconds(),
              [resp, secret = std::move(made.value().secret)](const storage::TokenRecord& t) {
                token_to_proto(t, resp->mutable_token());
                resp->set_secret(secret);
              });
    return reactor;
  }

  grpc::ServerUnaryReactor* ListTokens(grpc::CallbackServerContext* ctx, const v1::ListTokensRequest* req,
                                       v1::ListTokensResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    std::string user = req->user();
    if (finish_if(reactor, readers_.gate->known(access, "list tokens"))) return reactor;
    if (access.checked && !access.admin) {  // a user's own tokens only
      if (user.empty()) user = access.caller.user;
      if (user != access.caller.user &&
          finish_if(reactor, readers_.gate->admin_only(access, "list the tokens of user " + user)))
        return reactor;
    }
    // A page of about 2 MiB at most (a token is a few hundred bytes); the token names the last
    // one sent, in the list's order (creation time, then id).
    const auto all = readers_.tokens->list(user);
    auto from = all.begin();
    if (!req->page_token().empty()) {
      from = std::find_if(all.begin(), all.end(), [&](const auto& t) { return t.id == req->page_token(); });
      if (from == all.end() &&
          finish_if(reactor, {grpc::StatusCode::INVALID_ARGUMENT,
                              "page_token: \"" + req->page_token() + "\" is not a token this server gave"}))
        return reactor;
      ++from;
    }
    std::size_t bytes = 0;
    for (auto it = from; it != all.end(); ++it) {
      v1::Token t;
      token_to_proto(*it, &t);
      if (bytes > 0 && bytes + t.ByteSizeLong() > kListPageBytes) {
        resp->set_next_page_token(std::prev(it)->id);
        break;
      }
      bytes += t.ByteSizeLong();
      *resp->add_tokens() = std::move(t);
    }
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerUnaryReactor* RevokeToken(grpc::CallbackServerContext* ctx, const v1::RevokeTokenRequest* req,
                                        v1::RevokeTokenResponse* resp) override {
    auto* reactor = ctx->DefaultReactor();
    const Access access = readers_.gate->of(*ctx);
    const Audited what{access, "token.revoke", "token " + req->id()};
    if (refuse_if(loop_, reactor, what, readers_.gate->known(access, "revoke a token"))) return reactor;
    auto token = readers_.tokens->find_id(req->id());
    // Another user's token is refused as if it did not exist for a non-admin (ids are not told).
    if (!token || (access.checked && !access.admin && token->user != access.caller.user)) {
      refuse_if(loop_, reactor, what,
                {grpc::StatusCode::NOT_FOUND, "token \"" + req->id() + "\" does not exist" +
                                                  (access.admin || !access.checked ? "" : " among yours") +
                                                  "; gpuq admin token ls lists them"});
      return reactor;
    }
    if (token->revoked_at > 0) {
      token_to_proto(*token, resp->mutable_token());
      audit_later(loop_, what, grpc::Status::OK);  // already revoked: nothing to write but the try
      reactor->Finish(grpc::Status::OK);
      return reactor;
    }
    put_token(loop_, *readers_.tokens, reactor, what, *token, 0,
              [resp](const storage::TokenRecord& t) { token_to_proto(t, resp->mutable_token()); });
    return reactor;
  }

 private:
  Loop& loop_;
  const Readers& readers_;
};

}  // namespace

std::unique_ptr<v1::Admin::CallbackService> make_admin_service(daemon::Loop& loop, const Readers& readers) {
  return std::make_unique<AdminService>(loop, readers);
}

}  // namespace gpuq::api
