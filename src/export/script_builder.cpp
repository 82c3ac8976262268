#include "export/script_builder.h"

#include <cmath>
#include <sstream>

#include "core/errors.h"
#include "export/scriptable.h"

namespace biaslab::script {

std::string lit(double v) {
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
  std::ostringstream s;
  s.precision(17);
  s << v;
  std::string out = s.str();
  if (out.find_first_of(".e") == std::string::npos) out += ".0";
  return out;
}

std::string ints(std::initializer_list<int64_t> v) {
  std::string out = "[";
  for (auto x : v) out += (out.size() > 1 ? ", " : "") + std::to_string(x);
  return out + "]";
}

std::string join(const std::string& path, const std::string& name) {
  return path.empty() ? name : path + "." + name;
}

Builder::Builder(int64_t image_size, Members root_attributes)
    : image_size_(image_size), root_attributes_(std::move(root_attributes)) {}

torch::jit::Module Builder::module(const torch::nn::Module& m, const std::string& path) {
  if (const auto* s = dynamic_cast<const Scriptable*>(&m)) return s->to_script(*this, path);
  if (auto out = torch_nn_script(m, *this, path)) return std::move(*out);
  throw Error("export: no TorchScript translation for the module '" + (path.empty() ? "(root)" : path) +
              "' of type " + m.name());
}

torch::jit::Module Builder::module(const torch::nn::AnyModule& m, const std::string& path) {
  return module(*m.ptr(), path);
}

torch::jit::Module Builder::make(const std::string& kind, const std::string& body, const Members& m) {
  std::string key = kind + "\n" + body;
  for (const auto& [name, t] : m.params) key += "\nP " + name;
  for (const auto& [name, t] : m.buffers) key += "\nB " + name;
  for (const auto& [name, sub] : m.modules) key += "\nM " + name + " " + sub.type()->name()->qualifiedName();
  for (const auto& [name, type, v] : m.attributes) key += "\nA " + name + " " + type->str();
  auto found = types_.find(key);
  const bool fresh = found == types_.end();
  torch::jit::Module out = [&] {
    if (!fresh) return torch::jit::Module(cu_, found->second);
    const int n = counts_[kind]++;
    const std::string name = n == 0 ? kind : kind + "_" + std::to_string(n);
    return torch::jit::Module(c10::QualifiedName("__torch__.biaslab." + name), cu_, /*shouldMangle=*/false);
  }();
  for (const auto& [name, sub] : m.modules) out.register_module(name, sub);
  for (const auto& [name, t] : m.params) out.register_parameter(name, t.detach().clone(), /*is_buffer=*/false);
  for (const auto& [name, t] : m.buffers) out.register_buffer(name, t.detach().clone());
  for (const auto& [name, type, v] : m.attributes) out.register_attribute(name, type, v);
  if (fresh) {
    out.define("def forward(self, x: Tensor) -> Tensor:\n" + body);
    types_.emplace(key, out.type());
  }
  return out;
}

torch::jit::Module Builder::chain(const std::string& kind,
                                  const torch::OrderedDict<std::string, std::shared_ptr<torch::nn::Module>>& children,
                                  const std::string& path) {
  Members mem;
  std::string body;
  for (const auto& item : children) {
    mem.modules.emplace_back(item.key(), module(*item.value(), join(path, item.key())));
    body += "    x = getattr(self, \"" + item.key() + "\").forward(x)\n";
  }
  return make(kind, body + "    return x\n", mem);
}

Members Builder::start(const std::string& path) const { return path.empty() ? root_attributes_ : Members{}; }

std::string Builder::input_check(const std::string& path, int64_t channels) const {
  if (!path.empty() || image_size_ <= 0) return "";
  const std::string c = std::to_string(channels), s = std::to_string(image_size_);
  return "    assert x.dim() == 4 and x.size(1) == " + c + " and x.size(2) == " + s + " and x.size(3) == " + s +
         ", \"expected images of shape (B, " + c + ", " + s + ", " + s + ")\"\n";
}

}  // namespace biaslab::script
