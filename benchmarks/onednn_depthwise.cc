// oneDNN's float32 depthwise 3x3 convolution of MobileNetV2's block (192 channels, 56x56,
// batch 32), stride 1 and 2: forward in each activation layout (nChw8c, NHWC, NCHW), and the
// backward data and weights passes in nChw8c, timed by themselves with the implementation
// oneDNN picks. Builds against the oneDNN pijit links (third_party/onednn.sh):
//
//   P=third_party/onednn/install
//   g++ -O2 -std=c++17 -I$P/include benchmarks/onednn_depthwise.cc -o /tmp/onednn_depthwise \
//       -L$P/lib -ldnnl -Wl,-rpath,$PWD/$P/lib
//   OMP_NUM_THREADS=2 /tmp/onednn_depthwise
//
// Prints one row per pass and layout: the median of 8 runs in ms.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using dnnl::memory;
using tag = memory::format_tag;

namespace {

template <typename F>
double MedianMs(F run) {
  std::vector<double> ms;
  for (int i = 0; i < 8; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

const char* Name(tag t) { return t == tag::nChw8c ? "nChw8c" : t == tag::nhwc ? "nhwc" : "nchw"; }

void Stride(const dnnl::engine& eng, dnnl::stream& s, int stride) {
  const memory::dim n = 32, c = 192, h = 56, w = 56;
  const memory::dim oh = (h + 2 - 3) / stride + 1, ow = (w + 2 - 3) / stride + 1;
  const memory::dims strides{stride, stride}, pad{1, 1};
  const auto alg = dnnl::algorithm::convolution_direct;
  const memory::desc wts({c, 1, 1, 3, 3}, memory::data_type::f32, tag::any);
  for (tag t : {tag::nChw8c, tag::nhwc, tag::nchw}) {
    const memory::desc src({n, c, h, w}, memory::data_type::f32, t);
    const memory::desc dst({n, c, oh, ow}, memory::data_type::f32, t);
    dnnl::convolution_forward::primitive_desc fwd(eng, dnnl::prop_kind::forward_inference, alg,
                                                  src, wts, dst, strides, pad, pad);
    memory ms(src, eng), md(dst, eng), mw(fwd.weights_desc(), eng);
    dnnl::convolution_forward prim(fwd);
    const double f = MedianMs([&] {
      prim.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DST, md}});
      s.wait();
    });
    std::printf("stride %d %-6s forward          %6.2f ms  %s\n", stride, Name(t), f,
                fwd.impl_info_str());
    if (t != tag::nChw8c) continue;
    dnnl::convolution_forward::primitive_desc hint(eng, dnnl::prop_kind::forward_training, alg,
                                                   src, wts, dst, strides, pad, pad);
    dnnl::convolution_backward_data::primitive_desc bd(eng, alg, src, wts, dst, strides, pad,
                                                       pad, hint);
    dnnl::convolution_backward_weights::primitive_desc bw(eng, alg, src, wts, dst, strides, pad,
                                                          pad, hint);
    memory mdw(bw.diff_weights_desc(), eng);
    dnnl::convolution_backward_data data(bd);
    dnnl::convolution_backward_weights weights(bw);
    const double d = MedianMs([&] {
      data.execute(s, {{DNNL_ARG_DIFF_SRC, ms}, {DNNL_ARG_WEIGHTS, mw}, {DNNL_ARG_DIFF_DST, md}});
      s.wait();
    });
    const double g = MedianMs([&] {
      weights.execute(s, {{DNNL_ARG_SRC, ms}, {DNNL_ARG_DIFF_WEIGHTS, mdw},
                          {DNNL_ARG_DIFF_DST, md}});
      s.wait();
    });
    std::printf("stride %d %-6s backward data    %6.2f ms  %s\n", stride, Name(t), d,
                bd.impl_info_str());
    std::printf("stride %d %-6s backward weights %6.2f ms  %s\n", stride, Name(t), g,
                bw.impl_info_str());
  }
}

}  // namespace

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  std::printf("oneDNN %d.%d\n", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
  for (int stride : {1, 2}) Stride(eng, s, stride);
}
