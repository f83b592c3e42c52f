// oneDNN's float32 3x3 convolutions of ResNet-18 (CIFAR) at batch 32, forward (inference),
// backward data and backward weights, timed by themselves: the implementation oneDNN picks and
// GFLOP/s, for the layouts it chooses (`any`) and for NHWC. Builds against oneDNN 2.x (the
// system's, as pijit links it) or 3.x, to compare versions on one machine:
//
//   g++ -O2 -std=c++17 benchmarks/onednn_conv.cc -o /tmp/onednn_conv -ldnnl
//   g++ -O2 -std=c++17 -I<3.x>/include benchmarks/onednn_conv.cc -o /tmp/onednn_conv3 \
//       -L<3.x>/lib -ldnnl -Wl,-rpath,<3.x>/lib
//   OMP_NUM_THREADS=2 /tmp/onednn_conv
//
// Prints one row per layer and layout: ms (median of 8 runs) and GFLOP/s per pass.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

using dnnl::algorithm;
using dnnl::memory;
using dnnl::prop_kind;
using tag = memory::format_tag;

namespace {

struct Passes {
  dnnl::convolution_forward::primitive_desc fwd;
  dnnl::convolution_backward_data::primitive_desc data;
  dnnl::convolution_backward_weights::primitive_desc weights;
};

Passes Make(const dnnl::engine& eng, const memory::desc& src, const memory::desc& wts,
            const memory::desc& dst) {
  const memory::dims stride{1, 1}, pad{1, 1};
  const auto alg = algorithm::convolution_direct;
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc hint(eng, prop_kind::forward_training, alg, src,
                                                 wts, dst, stride, pad, pad);
  return {dnnl::convolution_forward::primitive_desc(eng, prop_kind::forward_inference, alg, src,
                                                    wts, dst, stride, pad, pad),
          dnnl::convolution_backward_data::primitive_desc(eng, alg, src, wts, dst, stride, pad,
                                                          pad, hint),
          dnnl::convolution_backward_weights::primitive_desc(eng, alg, src, wts, dst, stride,
                                                             pad, pad, hint)};
#else
  dnnl::convolution_forward::primitive_desc hint(
      {prop_kind::forward_training, alg, src, wts, dst, stride, pad, pad}, eng);
  return {dnnl::convolution_forward::primitive_desc(
              {prop_kind::forward_inference, alg, src, wts, dst, stride, pad, pad}, eng),
          dnnl::convolution_backward_data::primitive_desc(
              {alg, src, wts, dst, stride, pad, pad}, eng, hint),
          dnnl::convolution_backward_weights::primitive_desc(
              {alg, src, wts, dst, stride, pad, pad}, eng, hint)};
#endif
}

// A buffer of `d`'s size holding small values (uninitialised memory may hold denormals).
memory Filled(const memory::desc& d, const dnnl::engine& eng) {
  memory m(d, eng);
  float* p = static_cast<float*>(m.get_data_handle());
  const size_t n = d.get_size() / sizeof(float);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<float>((i * 2654435761u) % 1000) / 1000.f - 0.5f;
  return m;
}

template <typename F>
double MedianMs(dnnl::stream& s, F run) {
  std::vector<double> times;
  for (int i = 0; i < 8; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    s.wait();
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main() {
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const auto f32 = memory::data_type::f32;
  const int64_t n = 32;
  std::printf("oneDNN %d.%d\n", DNNL_VERSION_MAJOR, DNNL_VERSION_MINOR);
  for (const auto [c, hw] : {std::pair<int64_t, int64_t>{64, 32}, {128, 16}, {256, 8}, {512, 4}}) {
    for (tag t : {tag::any, tag::nhwc}) {
      const memory::desc act({n, c, hw, hw}, f32, t), wts({c, c, 3, 3}, f32, tag::any);
      const Passes p = Make(eng, act, wts, act);
      memory x = Filled(p.fwd.src_desc(), eng), w = Filled(p.fwd.weights_desc(), eng);
      memory y = Filled(p.fwd.dst_desc(), eng);
      memory dx = Filled(p.data.diff_src_desc(), eng), dy = Filled(p.data.diff_dst_desc(), eng);
      memory wd = Filled(p.data.weights_desc(), eng);
      memory xw = Filled(p.weights.src_desc(), eng), dyw = Filled(p.weights.diff_dst_desc(), eng);
      memory dw = Filled(p.weights.diff_weights_desc(), eng);
      dnnl::convolution_forward fwd(p.fwd);
      dnnl::convolution_backward_data data(p.data);
      dnnl::convolution_backward_weights weights(p.weights);
      const double tf = MedianMs(s, [&] {
        fwd.execute(s, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
      });
      const double td = MedianMs(s, [&] {
        data.execute(s, {{DNNL_ARG_DIFF_SRC, dx}, {DNNL_ARG_WEIGHTS, wd}, {DNNL_ARG_DIFF_DST, dy}});
      });
      const double tw = MedianMs(s, [&] {
        weights.execute(s, {{DNNL_ARG_SRC, xw}, {DNNL_ARG_DIFF_WEIGHTS, dw},
                            {DNNL_ARG_DIFF_DST, dyw}});
      });
      const double gflop = 2.0 * n * hw * hw * c * c * 9 / 1e9;
      std::printf("%3ld ch %2ldx%-2ld %-4s | fwd %6.2f ms %3.0f GF/s %-13s | data %6.2f ms %3.0f %-26s"
                  " | weights %6.2f ms %3.0f %s\n",
                  static_cast<long>(c), static_cast<long>(hw), static_cast<long>(hw),
                  t == tag::any ? "any" : "nhwc", tf, gflop / tf * 1e3, p.fwd.impl_info_str(), td,
                  gflop / td * 1e3, p.data.impl_info_str(), tw, gflop / tw * 1e3,
                  p.weights.impl_info_str());
    }
  }
}
