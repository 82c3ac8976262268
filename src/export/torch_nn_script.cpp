// TorchScript of the LibTorch modules biaslab's models use, which cannot implement
// Scriptable: one translation per module type. biaslab's own modules translate
// themselves (export/scriptable.h).
#include <torch/torch.h>

#include <functional>
#include <optional>
#include <variant>
#include <vector>

#include "core/errors.h"
#include "export/script_builder.h"

namespace biaslab::script {
namespace nn = torch::nn;
namespace {

torch::jit::Module linear(const nn::LinearImpl& m, Builder& b, const std::string&) {
  Members mem;
  mem.params.emplace_back("weight", m.weight);
  if (m.bias.defined()) mem.params.emplace_back("bias", m.bias);
  return b.make("Linear",
                m.bias.defined() ? "    return torch.linear(x, self.weight, self.bias)\n"
                                 : "    return torch.linear(x, self.weight)\n",
                mem);
}

torch::jit::Module conv2d(const nn::Conv2dImpl& m, Builder& b, const std::string& path) {
  const auto& o = m.options;
  using std::get_if;  // padding is a c10::variant in LibTorch 1.13, a std::variant in 2.x: found by ADL
  const auto* pad = get_if<torch::ExpandingArray<2>>(&o.padding());
  if (!pad || o.padding_mode().index() != 0)
    throw Error("export: " + path + ": only explicit zero padding is translated");
  Members mem;
  mem.params.emplace_back("weight", m.weight);
  if (m.bias.defined()) mem.params.emplace_back("bias", m.bias);
  const std::string body = "    return torch.conv2d(x, self.weight, " +
                           std::string(m.bias.defined() ? "self.bias" : "None") + ", " +
                           ints({o.stride()->at(0), o.stride()->at(1)}) + ", " +
                           ints({(*pad)->at(0), (*pad)->at(1)}) + ", " +
                           ints({o.dilation()->at(0), o.dilation()->at(1)}) + ", " + std::to_string(o.groups()) +
                           ")\n";
  return b.make("Conv2d", body, mem);
}

// Eval mode: the running statistics.
torch::jit::Module batch_norm(const nn::BatchNorm2dImpl& m, Builder& b, const std::string&) {
  Members mem;
  mem.params = {{"weight", m.weight}, {"bias", m.bias}};
  mem.buffers = {{"running_mean", m.running_mean}, {"running_var", m.running_var},
                 {"num_batches_tracked", m.num_batches_tracked}};
  return b.make("BatchNorm2d",
                "    return torch.batch_norm(x, self.weight, self.bias, self.running_mean, self.running_var, "
                "False, 0.0, " + lit(m.options.eps()) + ", True)\n",
                mem);
}

torch::jit::Module max_pool(const nn::MaxPool2dImpl& m, Builder& b, const std::string&) {
  const auto& o = m.options;
  return b.make("MaxPool2d",
                "    return torch.max_pool2d(x, " + ints({o.kernel_size()->at(0), o.kernel_size()->at(1)}) + ", " +
                    ints({o.stride()->at(0), o.stride()->at(1)}) + ", " +
                    ints({o.padding()->at(0), o.padding()->at(1)}) + ", " +
                    ints({o.dilation()->at(0), o.dilation()->at(1)}) + ", " + (o.ceil_mode() ? "True" : "False") +
                    ")\n",
                {});
}

torch::jit::Module identity(const nn::IdentityImpl&, Builder& b, const std::string&) {
  return b.make("Identity", "    return x\n", {});
}

torch::jit::Module relu(const nn::ReLUImpl&, Builder& b, const std::string&) {
  return b.make("ReLU", "    return torch.relu(x)\n", {});
}

torch::jit::Module sequential(const nn::SequentialImpl& m, Builder& b, const std::string& path) {
  return b.chain("Sequential", m.named_children(), path);
}

torch::jit::Module module_list(const nn::ModuleListImpl& m, Builder& b, const std::string& path) {
  return b.chain("ModuleList", m.named_children(), path);
}

// The translation of a module of type T (or derived from it, e.g. a Sequential with a
// typed forward to fit in an AnyModule), nothing for another module.
using Translation =
    std::function<std::optional<torch::jit::Module>(const nn::Module&, Builder&, const std::string&)>;

template <typename T>
Translation of(torch::jit::Module (*translate)(const T&, Builder&, const std::string&)) {
  return [translate](const nn::Module& m, Builder& b, const std::string& path) -> std::optional<torch::jit::Module> {
    if (const auto* t = dynamic_cast<const T*>(&m)) return translate(*t, b, path);
    return std::nullopt;
  };
}

}  // namespace

std::optional<torch::jit::Module> torch_nn_script(const nn::Module& m, Builder& b, const std::string& path) {
  static const std::vector<Translation> translations = {
      of(linear),   of(conv2d), of(batch_norm), of(max_pool),
      of(identity), of(relu),   of(sequential), of(module_list),
  };
  for (const auto& translate : translations)
    if (auto out = translate(m, b, path)) return out;
  return std::nullopt;
}

}  // namespace biaslab::script
