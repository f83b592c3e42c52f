// Direct stride-1 convolutions over flattened padded planes (see conv_direct.h).
#include "kernels/cpu/conv_direct.h"

#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/loops.h"
#include "kernels/thread_pool.h"

namespace pijit::conv_direct {

#pragma GCC push_options
#pragma GCC target("avx512f")
#define PIJIT_CD_LANES 16
#define PIJIT_CD_NS avx512
#include "kernels/cpu/conv_direct_impl.inc"
#undef PIJIT_CD_NS
#undef PIJIT_CD_LANES
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define PIJIT_CD_LANES 8
#define PIJIT_CD_NS avx2
#include "kernels/cpu/conv_direct_impl.inc"
#undef PIJIT_CD_NS
#undef PIJIT_CD_LANES
#pragma GCC pop_options

#define PIJIT_CD_LANES 4
#define PIJIT_CD_NS sse2
#include "kernels/cpu/conv_direct_impl.inc"
#undef PIJIT_CD_NS
#undef PIJIT_CD_LANES

namespace {

struct Isa {
  int id, lanes, gw_ob;
  int fwd_shapes[3][2];  // (output channels, vectors) of each forward variant
  sse2::ForwardFn forward[3];
  decltype(&sse2::GradWeightRow) grad_weight;
};

// Instruction set id, then the loops compiled for it.
#define PIJIT_CD_ISA(id, ns)                                                            \
  Isa {                                                                                 \
    id, ns::kLanes, ns::kGwOb,                                                          \
        {{ns::kFwdShapes[0][0], ns::kFwdShapes[0][1]},                                  \
         {ns::kFwdShapes[1][0], ns::kFwdShapes[1][1]},                                  \
         {ns::kFwdShapes[2][0], ns::kFwdShapes[2][1]}},                                 \
        {ns::kForward[0], ns::kForward[1], ns::kForward[2]}, ns::GradWeightRow          \
  }
const Isa kIsas[] = {PIJIT_CD_ISA(1, sse2), PIJIT_CD_ISA(2, avx2), PIJIT_CD_ISA(3, avx512)};
#undef PIJIT_CD_ISA

cpu::IsaChoice& Choice() {
  static cpu::IsaChoice choice(cpu::IsaNeeds{/*fma_with_avx2=*/true, /*avx512_bw_dq_vl=*/false});
  return choice;
}

const Isa& Active() { return kIsas[Choice().Active() - 1]; }

int64_t RoundUp(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// Storage for `count` planes that PadPlanes fills (so not initialised here) and `slack`
// zeros after them, which the vector loops read past the last plane.
class PaddedPlanes {
 public:
  PaddedPlanes(int64_t count, int64_t plane, int64_t slack)
      : data_(new float[count * plane + slack]) {
    std::memset(data_.get() + count * plane, 0, sizeof(float) * slack);
  }
  float* data() const { return data_.get(); }

 private:
  std::unique_ptr<float[]> data_;
};

// Copies `planes` planes of h x w from src into dst as hp x wp planes, the data at row pt and
// column pl, zeros around; dst holds planes * hp * wp floats (plus slack the caller zeroes).
// Returns false when a copied value is infinite or NaN.
bool PadPlanes(const float* src, int64_t planes, int64_t h, int64_t w, int64_t pt, int64_t pl,
               int64_t hp, int64_t wp, float* dst) {
  std::atomic<bool> finite{true};
  const int64_t plane = hp * wp;
  ParallelFor(planes, (1 << 15) / (plane + 1) + 1, [&](int64_t p0, int64_t p1) {
    int bad = 0;
    for (int64_t q = p0; q < p1; ++q) {
      float* d = dst + q * plane;
      std::memset(d, 0, sizeof(float) * pt * wp);
      for (int64_t r = 0; r < h; ++r) {
        float* row = d + (pt + r) * wp;
        const float* s = src + (q * h + r) * w;
        std::memset(row, 0, sizeof(float) * pl);
        for (int64_t c = 0; c < w; ++c) {
          row[pl + c] = s[c];
          bad |= (s[c] - s[c]) != 0.0f;  // NaN for an infinity or a NaN
        }
        std::memset(row + pl + w, 0, sizeof(float) * (wp - pl - w));
      }
      std::memset(d + (pt + h) * wp, 0, sizeof(float) * (hp - pt - h) * wp);
    }
    if (bad) finite.store(false, std::memory_order_relaxed);
  });
  return finite.load();
}

bool AllFinite(const float* v, int64_t n) {
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= (v[i] - v[i]) != 0.0f;
  return !bad;
}

// One output plane (`oh` rows of `ow`, read `stride` apart) through the epilogue, in the
// order of the ops it replaces, each rounded as they would be: + bias, + residual, relu. One
// loop per combination, so that each vectorises.
using EpiloguePlaneFn = void (*)(const float* src, int64_t stride, float* d, int64_t oh,
                                 int64_t ow, float bias, const float* res);
template <bool kBias, bool kResidual, bool kRelu>
void EpiloguePlane(const float* src, int64_t stride, float* d, int64_t oh, int64_t ow,
                   float bias, const float* res) {
  for (int64_t r = 0; r < oh; ++r, src += stride, d += ow) {
    for (int64_t c = 0; c < ow; ++c) {
      float v = src[c];
      if constexpr (kBias) v = v + bias;
      if constexpr (kResidual) v = v + res[r * ow + c];
      if constexpr (kRelu) v = loops::Relu(v);
      d[c] = v;
    }
  }
}

// The plane function for `epi`, or null when it changes nothing (a copy).
EpiloguePlaneFn PickEpilogue(const Epilogue& epi) {
  static constexpr EpiloguePlaneFn kPlanes[8] = {
      nullptr,                             EpiloguePlane<false, false, true>,
      EpiloguePlane<false, true, false>,   EpiloguePlane<false, true, true>,
      EpiloguePlane<true, false, false>,   EpiloguePlane<true, false, true>,
      EpiloguePlane<true, true, false>,    EpiloguePlane<true, true, true>};
  return kPlanes[(epi.channel_bias ? 4 : 0) + (epi.residual ? 2 : 0) + (epi.relu ? 1 : 0)];
}

// A stride-1 convolution of x[n, groups * cin, h, w] into out[n, groups * cout, OH, OW] with
// weight(g, oc, ic, i, j) the tap (i, j) from input channel ic to output channel oc of group g.
template <typename WeightFn>
bool RunForward(int64_t n, int64_t groups, int64_t cin, int64_t cout, int64_t h, int64_t w,
                int64_t kh, int64_t kw, const int64_t pad[4], const float* x, WeightFn weight,
                const float* bias, float* out, const Epilogue& epi) {
  const Isa& isa = Active();
  // Many output channels share each input load; with few, longer runs per load.
  const int variant = cout >= 5 ? 0 : cout >= 2 ? 1 : 2;
  const int64_t ob = isa.fwd_shapes[variant][0];
  const auto forward = isa.forward[variant];
  const int64_t hp = h + pad[0] + pad[1], wp = w + pad[2] + pad[3];
  const int64_t oh = hp - kh + 1, ow = wp - kw + 1, plane = hp * wp;
  const int64_t len = (oh - 1) * wp + ow;
  const int64_t lr = RoundUp(len, isa.fwd_shapes[variant][1] * isa.lanes);
  const int64_t c = groups * cin, o = groups * cout;
  // Reads run past the last plane by up to lr - len floats.
  const PaddedPlanes xp(n * c, plane, lr - len + isa.lanes);
  if (!PadPlanes(x, n * c, h, w, pad[0], pad[2], hp, wp, xp.data())) return false;

  const int64_t blocks = (cout + ob - 1) / ob, taps = kh * kw;
  // Packed weights [group][block][ic][i][j][ob] and biases [group][block][ob], zero past cout.
  std::vector<float> wpk(groups * blocks * cin * taps * ob, 0.0f), bpk(groups * blocks * ob, 0.0f);
  int bad = 0;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t oc = 0; oc < cout; ++oc) {
      float* dst = wpk.data() + (g * blocks + oc / ob) * cin * taps * ob + oc % ob;
      for (int64_t ic = 0; ic < cin; ++ic)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const float v = weight(g, oc, ic, i, j);
            bad |= (v - v) != 0.0f;
            dst[((ic * kh + i) * kw + j) * ob] = v;
          }
      if (bias) bpk[(g * blocks + oc / ob) * ob + oc % ob] = bias[g * cout + oc];
    }
  if (bad || (bias && !AllFinite(bias, o))) return false;

  const EpiloguePlaneFn finish = PickEpilogue(epi);
  ParallelFor(n * groups * blocks, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> t(ob * lr);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / (groups * blocks), g = task / blocks % groups, blk = task % blocks;
      forward(xp.data() + (b * c + g * cin) * plane, cin, plane, wp, kh, kw,
              wpk.data() + (g * blocks + blk) * cin * taps * ob,
              bpk.data() + (g * blocks + blk) * ob, lr, t.data());
      for (int64_t j = 0; j < ob && blk * ob + j < cout; ++j) {
        float* dst = out + (b * o + g * cout + blk * ob + j) * oh * ow;
        const float* src = t.data() + j * lr;
        if (finish == nullptr) {
          for (int64_t r = 0; r < oh; ++r)
            std::memcpy(dst + r * ow, src + r * wp, sizeof(float) * ow);
          continue;
        }
        finish(src, wp, dst, oh, ow,
               epi.channel_bias ? epi.channel_bias[g * cout + blk * ob + j] : 0.0f,
               epi.residual ? epi.residual + (dst - out) : nullptr);
      }
    }
  });
  return true;
}

}  // namespace

bool Applies(const Problem& p) {
  if (p.n < 1 || p.groups < 1 || p.c % p.groups || p.o % p.groups) return false;
  const int64_t cg = p.c / p.groups, og = p.o / p.groups;
  for (int s = 0; s < 4; ++s) {
    if (p.pad[s] < 0 || p.pad[s] > (s < 2 ? p.kh : p.kw) - 1) return false;
  }
  // Many channels on both sides, or groups of 8-channel multiples: oneDNN's blocked direct
  // kernels are faster.
  if (p.groups > 1 && cg % 8 == 0 && og % 8 == 0) return false;
  return cg >= 1 && og >= 1 && (cg < 16 || og < 16) && p.kh >= 1 && p.kw >= 1 &&
         p.out_h() >= 1 && p.out_w() >= 1;
}

bool Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out,
             bool relu) {
  Epilogue epi;
  epi.relu = relu;
  return Forward(p, x, w, bias, out, epi);
}

bool Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out,
             const Epilogue& epi) {
  const int64_t cg = p.c / p.groups, og = p.o / p.groups, kh = p.kh, kw = p.kw;
  auto weight = [&](int64_t g, int64_t oc, int64_t ic, int64_t i, int64_t j) {
    return w[(((g * og + oc) * cg + ic) * kh + i) * kw + j];
  };
  return RunForward(p.n, p.groups, cg, og, p.h, p.w, kh, kw, p.pad, x, weight, bias, out, epi);
}

bool GradInput(const Problem& p, const float* dy, const float* w, float* dx) {
  // dx = dy padded by the kernel less the forward padding, (*) w flipped, channels swapped.
  const int64_t cg = p.c / p.groups, og = p.o / p.groups, kh = p.kh, kw = p.kw;
  const int64_t pad[4] = {kh - 1 - p.pad[0], kh - 1 - p.pad[1], kw - 1 - p.pad[2],
                          kw - 1 - p.pad[3]};
  auto weight = [&](int64_t g, int64_t ic, int64_t oc, int64_t i, int64_t j) {
    return w[(((g * og + oc) * cg + ic) * kh + (kh - 1 - i)) * kw + (kw - 1 - j)];
  };
  return RunForward(p.n, p.groups, og, cg, p.out_h(), p.out_w(), kh, kw, pad, dy, weight,
                    nullptr, dx, Epilogue{});
}

bool GradWeight(const Problem& p, const float* x, const float* dy, float* dw) {
  const Isa& isa = Active();
  const int64_t cg = p.c / p.groups, og = p.o / p.groups, kh = p.kh, kw = p.kw;
  const int64_t hp = p.h + p.pad[0] + p.pad[1], wp = p.w + p.pad[2] + p.pad[3];
  const int64_t oh = p.out_h(), ow = p.out_w(), plane = hp * wp;
  const int64_t len = (oh - 1) * wp + ow, lr = RoundUp(len, isa.lanes);
  const PaddedPlanes xp(p.n * p.c, plane, lr - len + isa.lanes);
  if (!PadPlanes(x, p.n * p.c, p.h, p.w, p.pad[0], p.pad[2], hp, wp, xp.data())) return false;
  // Output-gradient planes with x's row pitch, zero in the dropped columns and past len;
  // [image][group][channel, padded to a multiple of gw_ob][lr].
  const int64_t ob = isa.gw_ob, blocks = (og + ob - 1) / ob, ogp = blocks * ob;
  const int64_t image = p.groups * ogp * lr;
  std::unique_ptr<float[]> dyw(new float[p.n * image]);  // every element written below
  std::atomic<bool> finite{true};
  ParallelFor(p.n, 1, [&](int64_t b0, int64_t b1) {
    int bad = 0;
    for (int64_t b = b0; b < b1; ++b)
      for (int64_t g = 0; g < p.groups; ++g)
        for (int64_t oc = 0; oc < ogp; ++oc) {
          float* d = dyw.get() + b * image + (g * ogp + oc) * lr;
          if (oc >= og) {  // a channel that pads the last block
            std::memset(d, 0, sizeof(float) * lr);
            continue;
          }
          const float* s = dy + ((b * p.o) + g * og + oc) * oh * ow;
          for (int64_t r = 0; r < oh; ++r) {
            for (int64_t c = 0; c < ow; ++c) {
              d[r * wp + c] = s[r * ow + c];
              bad |= (s[r * ow + c] - s[r * ow + c]) != 0.0f;
            }
            // The dropped columns, and after the last row everything up to lr.
            const int64_t end = r + 1 < oh ? (r + 1) * wp : lr;
            std::memset(d + r * wp + ow, 0, sizeof(float) * (end - r * wp - ow));
          }
        }
    if (bad) finite.store(false, std::memory_order_relaxed);
  });
  if (!finite.load()) return false;

  // One task per (group, block of output channels, input channel, kernel row): enough
  // tasks for every thread even with one input channel.
  const int64_t taps = kh * kw;
  ParallelFor(p.groups * blocks * cg * kh, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> acc(ob * kw);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t i = task % kh, ic = task / kh % cg, blk = task / (kh * cg) % blocks,
                    g = task / (kh * cg * blocks);
      isa.grad_weight(dyw.get() + (g * ogp + blk * ob) * lr, image,
                      xp.data() + (g * cg + ic) * plane, p.c * plane, p.n, lr, wp, i, kw,
                      acc.data(), kw);
      for (int64_t j = 0; j < ob && blk * ob + j < og; ++j)
        std::memcpy(dw + ((g * og + blk * ob + j) * cg + ic) * taps + i * kw,
                    acc.data() + j * kw, sizeof(float) * kw);
    }
  });
  return true;
}

void ForceIsaForTesting(int isa) { Choice().Force(isa); }

int ActiveIsa() { return Active().id; }

}  // namespace pijit::conv_direct
