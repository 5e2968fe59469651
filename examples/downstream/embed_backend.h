// A toy in-process backend: it lowers the embedding cuts (decode_embed, batch_embed) with
// its own code and declines every other cut. `plant_bug` makes it read the row of the
// next token, the kind of bug a conformance campaign is for.
#pragma once

#include <backend/backend.h>

class EmbedBackend : public cutcheck::Backend {
 public:
  explicit EmbedBackend(bool plant_bug = false) : plant_bug_(plant_bug) {}
  std::string name() const override { return plant_bug_ ? "embed (with a planted bug)" : "embed"; }
  bool supports(const cutcheck::Cut& cut, int64_t tp) const override;
  std::unique_ptr<cutcheck::Lowered> lower(const cutcheck::fs::path& folder) override;

 private:
  bool plant_bug_;
};
