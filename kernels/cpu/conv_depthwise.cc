// Depthwise convolutions over rows (see conv_depthwise.h).
#include "kernels/cpu/conv_depthwise.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/thread_pool.h"

namespace pijit::conv_depthwise {

#pragma GCC push_options
#pragma GCC target("avx512f")
#define PIJIT_DW_LANES 16
#define PIJIT_DW_NS avx512
#include "kernels/cpu/conv_depthwise_impl.inc"
#undef PIJIT_DW_NS
#undef PIJIT_DW_LANES
#pragma GCC pop_options

#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define PIJIT_DW_LANES 8
#define PIJIT_DW_NS avx2
#include "kernels/cpu/conv_depthwise_impl.inc"
#undef PIJIT_DW_NS
#undef PIJIT_DW_LANES
#pragma GCC pop_options

#define PIJIT_DW_LANES 4
#define PIJIT_DW_NS sse2
#include "kernels/cpu/conv_depthwise_impl.inc"
#undef PIJIT_DW_NS
#undef PIJIT_DW_LANES

namespace {

struct Isa {
  int id, lanes;
  decltype(&sse2::GatherRowFixed<9>) gather9, gather25;
  decltype(&sse2::GatherRowAny) gather_any;
  decltype(&sse2::DotRowFixed<3>) dot3, dot5;
  decltype(&sse2::DotRowAny) dot_any;
  decltype(&sse2::Axpy) axpy;
  decltype(&sse2::GatherPlaneFixed<9>) gather_plane9, gather_plane25;
  decltype(&sse2::GatherPlaneAny) gather_plane_any;
  decltype(&sse2::DotPlaneFixed<9>) dot_plane9, dot_plane5, dot_plane3;
};

#define PIJIT_DW_ISA(id, ns)                                                                \
  Isa {                                                                                     \
    id, ns::kLanes, ns::GatherRowFixed<9>, ns::GatherRowFixed<25>, ns::GatherRowAny,        \
        ns::DotRowFixed<3>, ns::DotRowFixed<5>, ns::DotRowAny, ns::Axpy,                    \
        ns::GatherPlaneFixed<9>, ns::GatherPlaneFixed<25>, ns::GatherPlaneAny,              \
        ns::DotPlaneFixed<9>, ns::DotPlaneFixed<5>, ns::DotPlaneFixed<3>                    \
  }
const Isa kIsas[] = {PIJIT_DW_ISA(1, sse2), PIJIT_DW_ISA(2, avx2), PIJIT_DW_ISA(3, avx512)};
#undef PIJIT_DW_ISA

cpu::IsaChoice& Choice() {
  static cpu::IsaChoice choice(cpu::IsaNeeds{/*fma_with_avx2=*/true, /*avx512_bw_dq_vl=*/false});
  return choice;
}

const Isa& Active() { return kIsas[Choice().Active() - 1]; }

// An image plane as rows of s runs (s the column stride): column col of row r is at
// base[r * row_pitch + (col % s) * phase_pitch + col / s], so the columns a window with
// stride s reads (col, col + s, ...) are contiguous. s = 1: plain rows.
template <typename T>
struct Phased {
  T* base;
  int64_t row_pitch, phase_pitch;
  // Column x * phases + off of row r, for the phase and shift of `off` (see Tap): no division
  // in the loops.
  T* At(int64_t r, int64_t phase, int64_t shift, int64_t x) const {
    return base + r * row_pitch + phase * phase_pitch + x + shift;
  }
};

int64_t PhaseLength(int64_t w, int64_t s) { return (w + s - 1) / s; }

// Plain rows of h x w at src, split into s phases in dst (h * s * PhaseLength(w, s) floats).
Phased<const float> SplitPhases(const float* src, int64_t h, int64_t w, int64_t s, float* dst) {
  if (s == 1) return {src, w, 0};
  const int64_t len = PhaseLength(w, s);
  for (int64_t r = 0; r < h; ++r)
    for (int64_t ph = 0; ph < s; ++ph) {
      float* d = dst + (r * s + ph) * len;
      const float* from = src + r * w + ph;
      for (int64_t k = 0; ph + s * k < w; ++k) d[k] = from[s * k];
    }
  return {dst, s * len, len};
}

// The output columns x < ow whose input column off + x * s lies in [0, w).
struct Columns {
  int64_t begin, end;
};
Columns ColumnsInside(int64_t off, int64_t s, int64_t w, int64_t ow) {
  const int64_t last = w - 1 - off;
  // Division truncates toward zero: a negative `last` (no column inside) must not divide.
  const int64_t begin = off >= 0 ? 0 : (-off + s - 1) / s;
  const int64_t end = last < 0 ? 0 : std::min(ow, last / s + 1);
  return {begin, std::max(begin, end)};
}

// A convolution's geometry, input [h, w] -> output [oh, ow].
struct Window {
  int64_t h, w, oh, ow, kh, kw, sy, sx, dy, dx, pt, pl;
  int64_t ColumnOffset(int64_t j) const { return j * dx - pl; }
  int64_t Row(int64_t y, int64_t i) const { return y * sy - pt + i * dy; }
  bool RowInside(int64_t r) const { return r >= 0 && r < h; }
};

// Kernel column j reads input column x * sx + off for output column x: in a plane split
// into sx phases, element x + shift of phase `phase` (off = shift * sx + phase, 0 <= phase < sx).
struct Tap {
  Columns inside;  // the output columns for which it reads inside the image
  int64_t phase, shift;
};

// The taps of every kernel column, and the run [all.begin, all.end) of output columns where
// all of them read inside the image (empty when some column reads none).
struct TapColumns {
  std::vector<Tap> of;
  Columns all;
  explicit TapColumns(const Window& g) : of(g.kw), all{0, g.ow} {
    for (int64_t j = 0; j < g.kw; ++j) {
      const int64_t off = g.ColumnOffset(j);
      const int64_t phase = ((off % g.sx) + g.sx) % g.sx;
      of[j] = {ColumnsInside(off, g.sx, g.w, g.ow), phase, (off - phase) / g.sx};
      all.begin = std::max(all.begin, of[j].inside.begin);
      all.end = std::min(all.end, of[j].inside.end);
    }
    if (all.end < all.begin) all.end = all.begin;
  }
};

// Per-thread buffers of the plane loops.
struct Scratch {
  std::vector<const float*> rows;
  std::vector<float> weights, acc;
};

// One output plane: out[y][x] = sum over sources k and taps (i, j) inside the image of
// wk[k][i * kw + j] * in[k](y * sy - pt + i * dy, x * sx - pl + j * dx), + bias if has_bias.
void GatherPlane(const Isa& isa, const Window& g, const TapColumns& cols,
                 const Phased<const float>* in, const float* const* wk, int64_t sources,
                 bool has_bias, float bias, float* out, Scratch& s) {
  const int64_t taps = g.kh * g.kw;
  s.rows.resize(sources * taps);
  s.weights.resize(sources * taps);
  const Columns all = cols.all;
  for (int64_t y = 0; y < g.oh; ++y) {
    float* orow = out + y * g.ow;
    int64_t count = 0;
    for (int64_t k = 0; k < sources; ++k)
      for (int64_t i = 0; i < g.kh; ++i) {
        const int64_t r = g.Row(y, i);
        if (!g.RowInside(r)) continue;
        for (int64_t j = 0; j < g.kw; ++j, ++count) {
          s.weights[count] = wk[k][i * g.kw + j];
          const Tap& tap = cols.of[j];
          s.rows[count] =
              all.end > all.begin ? in[k].At(r, tap.phase, tap.shift, all.begin) : nullptr;
        }
      }
    if (all.end > all.begin) {
      const int64_t len = all.end - all.begin;
      if (count == 9) {
        isa.gather9(s.rows.data(), s.weights.data(), len, orow + all.begin);
      } else if (count == 25) {
        isa.gather25(s.rows.data(), s.weights.data(), len, orow + all.begin);
      } else {
        isa.gather_any(s.rows.data(), s.weights.data(), count, len, orow + all.begin);
      }
    }
    // The border columns, where some taps fall in the padding.
    for (int64_t x = 0; x < g.ow; ++x) {
      if (x == all.begin && all.end > all.begin) x = all.end;
      if (x >= g.ow) break;
      float a = 0.0f;
      for (int64_t k = 0; k < sources; ++k)
        for (int64_t i = 0; i < g.kh; ++i) {
          const int64_t r = g.Row(y, i);
          if (!g.RowInside(r)) continue;
          for (int64_t j = 0; j < g.kw; ++j) {
            const Tap& tap = cols.of[j];
            if (x >= tap.inside.begin && x < tap.inside.end)
              a += wk[k][i * g.kw + j] * *in[k].At(r, tap.phase, tap.shift, x);
          }
        }
      orow[x] = a;
    }
    if (has_bias)
      for (int64_t x = 0; x < g.ow; ++x) orow[x] = orow[x] + bias;
  }
}

// GatherPlane for a window whose every tap reads inside its input (a copy with the padding
// materialised): one call of a plane loop.
void GatherPaddedPlane(const Isa& isa, const Window& g, const TapColumns& cols,
                       const Phased<const float>* in, const float* const* wk, int64_t sources,
                       bool has_bias, float bias, float* out, Scratch& s) {
  const int64_t taps = g.kh * g.kw, count = sources * taps;
  s.rows.resize(2 * count);  // the taps' bases, then GatherPlaneAny's row pointers
  s.weights.resize(count);
  int64_t t = 0;
  for (int64_t k = 0; k < sources; ++k)
    for (int64_t i = 0; i < g.kh; ++i)
      for (int64_t j = 0; j < g.kw; ++j, ++t) {
        s.weights[t] = wk[k][i * g.kw + j];
        s.rows[t] = in[k].At(g.Row(0, i), cols.of[j].phase, cols.of[j].shift, 0);
      }
  const int64_t step = g.sy * in[0].row_pitch;
  if (count == 9) {
    isa.gather_plane9(s.rows.data(), s.weights.data(), step, g.oh, g.ow, out);
  } else if (count == 25) {
    isa.gather_plane25(s.rows.data(), s.weights.data(), step, g.oh, g.ow, out);
  } else {
    isa.gather_plane_any(s.rows.data(), s.weights.data(), count, step, g.oh, g.ow, out,
                         s.rows.data() + count);
  }
  if (has_bias)
    for (int64_t e = 0; e < g.oh * g.ow; ++e) out[e] = out[e] + bias;
}

Window ForwardWindow(const Problem& p) {
  return {p.h, p.w, p.out_h, p.out_w, p.kh, p.kw, p.stride[0], p.stride[1],
          p.dilation[0], p.dilation[1], p.pad[0], p.pad[2]};
}

// A window over a copy of its input with the padding as zeros around it (and beyond the input
// where the last windows reach past it): every tap reads inside the copy, so each output row
// is one vector run, with no border columns.
struct Materialized {
  Window g;              // the window over the copy (padding zero, or negative: skipped rows)
  int64_t top, left;     // where the input lies in the copy
  int64_t phase_length;  // the copy is split into g.sx phases of this many columns per row
  int64_t size() const { return g.h * g.sx * phase_length; }
};

Materialized Materialize(const Window& g) {
  const int64_t top = std::max<int64_t>(g.pt, 0), left = std::max<int64_t>(g.pl, 0);
  Window m = g;
  m.h = std::max(top + g.h, top + g.Row(g.oh - 1, g.kh - 1) + 1);
  m.w = std::max(left + g.w, left + (g.ow - 1) * g.sx + g.ColumnOffset(g.kw - 1) + 1);
  m.pt = g.pt - top;
  m.pl = g.pl - left;
  return {m, top, left, PhaseLength(m.w, g.sx)};
}

// For each phase of a copy's row: f(first, at), the input columns first, first + s, ... lying
// at elements at, at + 1, ... of the row (input column col is column col + left of the copy).
template <typename F>
void ForEachPhase(const Materialized& mz, F f) {
  const int64_t s = mz.g.sx;
  for (int64_t ph = 0; ph < s; ++ph) {
    const int64_t first = ((ph - mz.left) % s + s) % s;  // (first + left) % s == ph
    f(first, ph * mz.phase_length + (first + mz.left) / s);
  }
}

// Copies the h x w plane src into the copy dst (whose padding the caller zeroed once).
Phased<const float> CopyInto(const Materialized& mz, const float* src, int64_t h, int64_t w,
                             float* dst) {
  const int64_t s = mz.g.sx, pitch = s * mz.phase_length;
  for (int64_t r = 0; r < h; ++r) {
    float* row = dst + (r + mz.top) * pitch;
    const float* from = src + r * w;
    if (s == 1) {
      std::memcpy(row + mz.left, from, sizeof(float) * w);
      continue;
    }
    ForEachPhase(mz, [&](int64_t first, int64_t at) {
      for (int64_t col = first, k = at; col < w; col += s, ++k) row[k] = from[col];
    });
  }
  return {dst, pitch, mz.phase_length};
}

// The inverse of CopyInto: the inside of the copy src into the h x w plane dst.
void CopyOut(const Materialized& mz, const float* src, int64_t h, int64_t w, float* dst) {
  const int64_t s = mz.g.sx, pitch = s * mz.phase_length;
  for (int64_t r = 0; r < h; ++r) {
    const float* row = src + (r + mz.top) * pitch;
    float* to = dst + r * w;
    ForEachPhase(mz, [&](int64_t first, int64_t at) {
      for (int64_t col = first, k = at; col < w; col += s, ++k) to[col] = row[k];
    });
  }
}

bool AllFinite(const float* v, int64_t n) {
  int bad = 0;
  for (int64_t i = 0; i < n; ++i) bad |= (v[i] - v[i]) != 0.0f;
  return !bad;
}

// GatherPlane over every image and channel: task (b, c) reads the `sources` planes
// source(b, c, k) (of the window's input size) and writes the `outputs` planes out(b, c, q)
// with the weights weight(c, q, k) (+ bias[c * outputs + q] when bias is given). With
// `pad_zeros` the planes are read from copies with their padding as zeros: exact when every
// weight is finite (a padded tap adds a zero), and faster.
template <typename Source, typename Weight, typename Out>
void RunGather(const Isa& isa, const Window& g, bool pad_zeros, int64_t n, int64_t c,
               int64_t sources, int64_t outputs, const float* bias, Source source,
               Weight weight, Out out) {
  const Materialized mz = Materialize(g);
  const Window& used = pad_zeros ? mz.g : g;
  const TapColumns cols(used);
  const int64_t copy = pad_zeros ? mz.size() : g.sx > 1 ? g.h * g.sx * PhaseLength(g.w, g.sx) : 0;
  ParallelFor(n * c, 1, [&](int64_t t0, int64_t t1) {
    Scratch s;
    // Zeros once: the copies' padding is never written.
    std::vector<float> copies(sources * copy, 0.0f);
    std::vector<Phased<const float>> in(sources);
    std::vector<const float*> wk(sources);
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / c, ch = task % c;
      for (int64_t k = 0; k < sources; ++k) {
        float* dst = copies.data() + k * copy;
        in[k] = pad_zeros ? CopyInto(mz, source(b, ch, k), g.h, g.w, dst)
                          : SplitPhases(source(b, ch, k), g.h, g.w, g.sx, dst);
      }
      for (int64_t q = 0; q < outputs; ++q) {
        for (int64_t k = 0; k < sources; ++k) wk[k] = weight(ch, q, k);
        const float bq = bias ? bias[ch * outputs + q] : 0.0f;
        if (pad_zeros) {
          GatherPaddedPlane(isa, used, cols, in.data(), wk.data(), sources, bias != nullptr, bq,
                            out(b, ch, q), s);
        } else {
          GatherPlane(isa, used, cols, in.data(), wk.data(), sources, bias != nullptr, bq,
                      out(b, ch, q), s);
        }
      }
    }
  });
}

// The input gradient of a stride-1 convolution: the forward convolution of the output
// gradient with the kernels flipped, padded by the kernel's extent less the forward padding,
// summed over the `multiplier` output channels of each input channel.
void GradInputStride1(const Isa& isa, const Problem& p, const float* dy, const float* w,
                      float* dx) {
  const int64_t m = p.multiplier, taps = p.kh * p.kw, o = p.c * m;
  std::vector<float> flipped(o * taps);
  for (int64_t oc = 0; oc < o; ++oc)
    for (int64_t t = 0; t < taps; ++t) flipped[oc * taps + t] = w[oc * taps + taps - 1 - t];
  const Window g{p.out_h, p.out_w, p.h, p.w, p.kh, p.kw, 1, 1, p.dilation[0], p.dilation[1],
                 p.dilation[0] * (p.kh - 1) - p.pad[0], p.dilation[1] * (p.kw - 1) - p.pad[2]};
  const int64_t oplane = p.out_h * p.out_w, plane = p.h * p.w;
  RunGather(
      isa, g, AllFinite(w, o * taps), p.n, p.c, m, 1, nullptr,
      [&](int64_t b, int64_t c, int64_t k) { return dy + (b * o + c * m + k) * oplane; },
      [&](int64_t c, int64_t, int64_t k) { return flipped.data() + (c * m + k) * taps; },
      [&](int64_t b, int64_t c, int64_t) { return dx + (b * p.c + c) * plane; });
}

// The input gradient of a strided convolution: each output-gradient row, scaled by a tap's
// weight, added into the input row and columns the tap read, in a zeroed copy of the input
// plane with its padding (split into phases, so those columns are contiguous), whose inside
// is then copied out.
void GradInputScatter(const Isa& isa, const Problem& p, const float* dy, const float* w,
                      float* dx) {
  const Materialized mz = Materialize(ForwardWindow(p));
  const Window& g = mz.g;
  const TapColumns cols(g);
  const int64_t m = p.multiplier, taps = p.kh * p.kw, o = p.c * m, plane = p.h * p.w;
  const int64_t s = g.sx, len = mz.phase_length;
  ParallelFor(p.n * p.c, 1, [&](int64_t t0, int64_t t1) {
    std::vector<float> copy(mz.size());
    const Phased<float> target{copy.data(), s * len, len};
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t b = task / p.c, c = task % p.c;
      std::fill(copy.begin(), copy.end(), 0.0f);
      for (int64_t k = 0; k < m; ++k) {
        const float* src = dy + (b * o + c * m + k) * p.out_h * p.out_w;
        const float* wt = w + (c * m + k) * taps;
        for (int64_t y = 0; y < p.out_h; ++y)
          for (int64_t i = 0; i < p.kh; ++i) {
            const int64_t r = g.Row(y, i);
            for (int64_t j = 0; j < p.kw; ++j) {
              const Tap& tap = cols.of[j];
              isa.axpy(wt[i * p.kw + j], src + y * p.out_w, p.out_w,
                       target.At(r, tap.phase, tap.shift, 0));
            }
          }
      }
      CopyOut(mz, copy.data(), p.h, p.w, dx + task * plane);
    }
  });
}

// The weight gradient of output channel oc (reading input plane x) over one image, added to
// sums[kh * kw]: float32 vector sums over the plane, their lanes then added in double.
void GradWeightPlane(const Isa& isa, const Window& g, const TapColumns& cols,
                     const Phased<const float>& x, const float* dy, Scratch& s, double* sums) {
  const int64_t lanes = isa.lanes, row_acc = g.kw * lanes;
  s.acc.assign(g.kh * row_acc, 0.0f);
  s.rows.resize(g.kw);
  const Columns all = cols.all;
  for (int64_t y = 0; y < g.oh; ++y) {
    const float* drow = dy + y * g.ow;
    for (int64_t i = 0; i < g.kh; ++i) {
      const int64_t r = g.Row(y, i);
      if (!g.RowInside(r)) continue;
      if (all.end > all.begin) {
        for (int64_t j = 0; j < g.kw; ++j)
          s.rows[j] = x.At(r, cols.of[j].phase, cols.of[j].shift, all.begin);
        const int64_t len = all.end - all.begin;
        float* acc = s.acc.data() + i * row_acc;
        if (g.kw == 3) {
          isa.dot3(drow + all.begin, s.rows.data(), len, acc);
        } else if (g.kw == 5) {
          isa.dot5(drow + all.begin, s.rows.data(), len, acc);
        } else {
          isa.dot_any(drow + all.begin, s.rows.data(), g.kw, len, acc);
        }
      }
      // The border columns, in double directly.
      for (int64_t j = 0; j < g.kw; ++j) {
        const Tap& tap = cols.of[j];
        for (int64_t xo = tap.inside.begin; xo < tap.inside.end; ++xo) {
          if (xo == all.begin && all.end > all.begin) xo = all.end;
          if (xo >= tap.inside.end) break;
          const float v = *x.At(r, tap.phase, tap.shift, xo);
          sums[i * g.kw + j] += static_cast<double>(drow[xo] * v);
        }
      }
    }
  }
  for (int64_t t = 0; t < g.kh * g.kw; ++t)
    for (int64_t l = 0; l < lanes; ++l) sums[t] += s.acc[t * lanes + l];
}

// GradWeightPlane for a window whose every tap reads inside its input, in plane loops: all
// taps at once for 3x3 kernels, a kernel row at a time for rows of 3 or 5. False, with sums
// untouched, for other kernels.
bool DotPaddedPlane(const Isa& isa, const Window& g, const TapColumns& cols,
                    const Phased<const float>& x, const float* dy, Scratch& s, double* sums) {
  if (g.kw != 3 && g.kw != 5) return false;
  s.rows.resize(g.kh * g.kw);
  for (int64_t i = 0; i < g.kh; ++i)
    for (int64_t j = 0; j < g.kw; ++j)
      s.rows[i * g.kw + j] = x.At(g.Row(0, i), cols.of[j].phase, cols.of[j].shift, 0);
  const int64_t step = g.sy * x.row_pitch;
  if (g.kh == 3 && g.kw == 3) {
    isa.dot_plane9(dy, s.rows.data(), step, g.oh, g.ow, sums);
    return true;
  }
  const auto row = g.kw == 3 ? isa.dot_plane3 : isa.dot_plane5;
  for (int64_t i = 0; i < g.kh; ++i)
    row(dy, s.rows.data() + i * g.kw, step, g.oh, g.ow, sums + i * g.kw);
  return true;
}

}  // namespace

bool Applies(const Problem& p) {
  return p.n >= 1 && p.c >= 2 && p.h >= 1 && p.w >= 1 && p.multiplier >= 1 && p.kh >= 1 &&
         p.kw >= 1 && p.stride[0] >= 1 && p.stride[1] >= 1 && p.dilation[0] >= 1 &&
         p.dilation[1] >= 1 && p.out_h >= 1 && p.out_w >= 1;
}

void Forward(const Problem& p, const float* x, const float* w, const float* bias, float* out) {
  const int64_t m = p.multiplier, taps = p.kh * p.kw, o = p.c * m;
  const int64_t plane = p.h * p.w, oplane = p.out_h * p.out_w;
  RunGather(
      Active(), ForwardWindow(p), AllFinite(w, o * taps), p.n, p.c, 1, m, bias,
      [&](int64_t b, int64_t c, int64_t) { return x + (b * p.c + c) * plane; },
      [&](int64_t c, int64_t q, int64_t) { return w + (c * m + q) * taps; },
      [&](int64_t b, int64_t c, int64_t q) { return out + (b * o + c * m + q) * oplane; });
}

void GradInput(const Problem& p, const float* dy, const float* w, float* dx) {
  if (p.stride[0] == 1 && p.stride[1] == 1) {
    GradInputStride1(Active(), p, dy, w, dx);
  } else {
    GradInputScatter(Active(), p, dy, w, dx);
  }
}

namespace {

// GradWeight's sums into dw; with `pad_zeros` over copies of the input with their padding as
// zeros, exact unless an output-gradient value is infinite or NaN (then some dw is too).
void GradWeightSums(const Problem& p, bool pad_zeros, const float* x, const float* dy,
                    float* dw) {
  const Isa& isa = Active();
  const Window g = ForwardWindow(p);
  const Materialized mz = Materialize(g);
  const Window& used = pad_zeros ? mz.g : g;
  const TapColumns cols(used);
  const int64_t m = p.multiplier, taps = p.kh * p.kw, o = p.c * m;
  const int64_t oplane = p.out_h * p.out_w;
  const int64_t copy = pad_zeros ? mz.size() : g.sx > 1 ? g.h * g.sx * PhaseLength(g.w, g.sx) : 0;
  // Channels times blocks of images: at least 64 tasks where the batch allows, a number fixed
  // by the problem, so the sums' order does not depend on the threads.
  const int64_t blocks = std::min(p.n, (64 + p.c - 1) / p.c);
  std::vector<double> partial(blocks * o * taps, 0.0);
  ParallelFor(p.c * blocks, 1, [&](int64_t t0, int64_t t1) {
    Scratch s;
    std::vector<float> buffer(copy, 0.0f);  // zeros once: the padding is never written
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t c = task / blocks, blk = task % blocks;
      const int64_t b0 = p.n * blk / blocks, b1 = p.n * (blk + 1) / blocks;
      for (int64_t b = b0; b < b1; ++b) {
        const float* plane = x + (b * p.c + c) * p.h * p.w;
        const Phased<const float> in =
            pad_zeros ? CopyInto(mz, plane, p.h, p.w, buffer.data())
                      : SplitPhases(plane, p.h, p.w, g.sx, buffer.data());
        for (int64_t k = 0; k < m; ++k) {
          const int64_t oc = c * m + k;
          double* sums = partial.data() + (blk * o + oc) * taps;
          if (!pad_zeros || !DotPaddedPlane(isa, used, cols, in, dy + (b * o + oc) * oplane, s,
                                            sums)) {
            GradWeightPlane(isa, used, cols, in, dy + (b * o + oc) * oplane, s, sums);
          }
        }
      }
    }
  });
  for (int64_t e = 0; e < o * taps; ++e) {
    double v = 0.0;
    for (int64_t blk = 0; blk < blocks; ++blk) v += partial[blk * o * taps + e];
    dw[e] = static_cast<float>(v);
  }
}

}  // namespace

void GradWeight(const Problem& p, const float* x, const float* dy, float* dw) {
  GradWeightSums(p, true, x, dy, dw);
  // A padded tap multiplies a zero by an output-gradient value: zero unless that value is
  // infinite or NaN, which then shows in the sums; those sums are redone skipping the padding.
  if (!AllFinite(dw, p.c * p.multiplier * p.kh * p.kw)) GradWeightSums(p, false, x, dy, dw);
}

void ForceIsaForTesting(int isa) { Choice().Force(isa); }

int ActiveIsa() { return Active().id; }

}  // namespace pijit::conv_depthwise
