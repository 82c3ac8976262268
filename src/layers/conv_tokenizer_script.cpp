// TorchScript of the CCT conv tokenizer (layers/conv_tokenizer.h): its layers in order.
#include <torch/torch.h>

#include "export/script_builder.h"
#include "layers/conv_tokenizer.h"

namespace biaslab {

torch::jit::Module ConvTokenizerImpl::to_script(script::Builder& b, const std::string& path) const {
  return b.chain("ConvTokenizer", named_children(), path);
}

}  // namespace biaslab
