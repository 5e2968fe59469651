#include "embed_backend.h"

#include <program/folder.h>
#include <program/manifest.h>

namespace {

using cutcheck::Tensor;
using cutcheck::TensorMap;

// x[r] = table[tokens[r]]: the embedding, written without the interpreter.
class LoweredEmbed : public cutcheck::Lowered {
 public:
  LoweredEmbed(Tensor table, bool batch, bool plant_bug) : table_(std::move(table)), batch_(batch), plant_bug_(plant_bug) {}

  TensorMap run(const TensorMap& inputs) override {
    const Tensor& tokens = inputs.at(batch_ ? "tokens" : "token");
    const int64_t vocab = table_.shape()[0], dim = table_.shape()[1], rows = tokens.elements();
    Tensor x(cutcheck::TensorType{cutcheck::DType::f32, batch_ ? cutcheck::Shape{rows, dim} : cutcheck::Shape{dim}});
    auto table = table_.as<float>();
    auto out = x.as_mut<float>();
    for (int64_t r = 0; r < rows; ++r) {
      int64_t token = tokens.as<int32_t>()[r];
      if (plant_bug_) token = (token + 1) % vocab;
      for (int64_t d = 0; d < dim; ++d) out[r * dim + d] = table[token * dim + d];
    }
    return {{"x", x}};
  }

 private:
  Tensor table_;
  bool batch_, plant_bug_;
};

}  // namespace

bool EmbedBackend::supports(const cutcheck::Cut& cut, int64_t tp) const {
  return tp == 1 && (cut.kind == cutcheck::CutKind::decode_embed || cut.kind == cutcheck::CutKind::batch_embed);
}

std::unique_ptr<cutcheck::Lowered> EmbedBackend::lower(const cutcheck::fs::path& folder) {
  // The manifest names the cut and where each weight is; this backend needs only the table.
  const cutcheck::ProgramFolder program = cutcheck::ProgramFolder::read(folder);
  const TensorMap weights = cutcheck::load_weights(program.manifest, folder);
  const cutcheck::Cut cut = cutcheck::Cut::parse(program.manifest.about.at("cut").get<std::string>());
  const bool batch = cut.kind == cutcheck::CutKind::batch_embed;
  return std::make_unique<LoweredEmbed>(weights.at("tok_embeddings"), batch, plant_bug_);
}
