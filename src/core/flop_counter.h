#pragma once
// Counts the multiply-accumulates of the ops run on this thread while a FlopCounter is
// alive, from the operator dispatcher's RecordFunction hooks (no model changes needed).
// Counted: convolutions, linear layers, matrix products (mm, bmm, matmul, addmm, baddbmm)
// and fused attention (scaled_dot_product_attention, LibTorch 2.x), each at the
// outermost level only, so aten::linear is not
// counted again as the addmm it calls. Not counted: elementwise ops, norms, softmax,
// pooling -- the convention of fvcore and torchvision's "GFLOPS" column (which are MACs).
// FLOPs = 2 x MACs.
#include <cstdint>
#include <memory>

namespace biaslab {

class FlopCounter {
 public:
  FlopCounter();
  ~FlopCounter();
  FlopCounter(const FlopCounter&) = delete;
  FlopCounter& operator=(const FlopCounter&) = delete;

  /// MACs counted so far on this thread.
  int64_t macs() const;
  int64_t flops() const { return 2 * macs(); }

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace biaslab
