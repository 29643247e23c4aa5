// The Gloo transport class, for code inside comm/ that needs the Gloo context itself (the native
// Gloo algorithms used as benchmark peers). Includes gloo headers: keep it out of public headers.
#pragma once

#include <memory>

#include <gloo/context.h>

#include "loom/comm/transport.h"

namespace loom::comm::internal {

class GlooTransport final : public Transport {
 public:
  explicit GlooTransport(std::shared_ptr<gloo::Context> context) : context_(std::move(context)) {}
  ~GlooTransport() override;
  int rank() const override { return context_->rank; }
  int size() const override { return context_->size; }
  std::string_view name() const override { return "gloo"; }
  std::unique_ptr<PendingOp> PostSend(const void* data, size_t bytes, int peer,
                                      uint64_t slot) override;
  std::unique_ptr<PendingOp> PostRecv(void* data, size_t bytes, int peer, uint64_t slot) override;
  const std::shared_ptr<gloo::Context>& context() const { return context_; }

 private:
  std::shared_ptr<gloo::Context> context_;
};

}  // namespace loom::comm::internal
