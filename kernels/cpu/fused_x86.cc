// Code generation of fused elementwise kernels with asmjit's x86::Compiler (AVX-512 or
// AVX2, chosen for the host).
//
// Generated function: void fn(void* out, const void* const* inputs, int64_t n)
//
//   i = 0
//   vector loop:  while i + W <= n: out[i..i+W) = program(inputs at i..i+W)
//                 (zmm, W = 16 / 8 floats / doubles, or ymm, W = 8 / 4)
//   tail loop:    while i < n:      out[i] = program(inputs at i)             (xmm, 1 element)
//
// The AVX-512 loop uses AVX512F only. Its comparisons write k registers that are turned into
// all-ones/zero lanes (as AVX2's vcmpps gives), and where, relu, maximum and minimum select
// through k masks (vptestmd / vcmpps) where AVX2 uses vblendvps: the same choice per lane,
// so both instruction sets give identical results.
// The tail runs the same instruction sequence on xmm registers, with scalar loads and stores
// (vmovss / vmovsd), so both loops compute identical per-element operations. An input with
// stride 0 (broadcast) is reloaded from its one address with vbroadcastss/sd. Literal
// constants and the exp coefficients are 32-byte entries of the function's constant pool
// used as memory operands, so they take no registers. A comparison's mask is a vcmpps/pd
// result (all ones or zero per lane) consumed by vblendvps/pd. The register allocator of
// x86::Compiler assigns (and if needed spills) the per-instruction virtual registers.
#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "asmjit/x86.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/fused.h"
#include "kernels/cpu/fused_x86.h"

namespace pijit {
namespace {

using namespace asmjit;

JitRuntime& Runtime() {
  static JitRuntime* rt = new JitRuntime();  // lives for the process: kernels may outlive statics
  return *rt;
}
std::mutex& RuntimeMutex() {
  static std::mutex* mu = new std::mutex();
  return *mu;
}

class RecordError : public ErrorHandler {
 public:
  void handleError(Error err, const char* message, BaseEmitter*) override {
    if (first == kErrorOk) {
      first = err;
      text = message;
    }
  }
  Error first = kErrorOk;
  std::string text;
};

// exp(x) = 2^n * exp(r), n = round(x / ln2), r = x - n*ln2 (ln2 in two parts, Cody & Waite),
// exp(r) by its Taylor polynomial on |r| <= ln2/2, and 2^n applied as 2^(n/2) * 2^(n - n/2)
// so that each factor is a normal number even where the result is subnormal or overflows.
struct ExpConsts {
  double lo, hi;            // x is clamped to [lo, hi]; beyond, the result is 0 / inf
  double log2e, ln2_hi, ln2_lo;
  int bias, mantissa_bits;
  int degree;               // Taylor coefficients 1/k!, k = degree..0
};
constexpr ExpConsts kExpF32 = {-104.0, 88.8, 1.44269504088896341, 0.693359375,
                               -2.12194440e-4, 127, 23, 7};
constexpr ExpConsts kExpF64 = {-745.2, 709.8, 1.44269504088896341, 6.93145751953125e-1,
                               1.42860682030941723212e-6, 1023, 52, 12};

// log(x) = e*ln2 + log(m) for x = 2^e * m, m in [sqrt(1/2), sqrt(2)) (subnormal x scaled up
// first), with f = m - 1, s = f / (2 + f) and log(1 + f) = 2*atanh(s) = f - (f^2/2 -
// s*(f^2/2 + R)), R = sum_k 2/(2k+1) s^(2k) (k = 1..terms); e*ln2 in two parts. Measured
// against a long-double log: 0.81 ulp (float32, 4 terms), 1 ulp (float64, 9 terms).
struct LogConsts {
  double ln2_hi, ln2_lo;  // e * ln2_hi is exact for every exponent e
  int terms;
  int64_t sqrt_half_bits;  // bit pattern of the float nearest sqrt(1/2) (m's lower bound)
  int64_t one_bits, mantissa_mask;
  int bias, mantissa_bits;
  double tiny, scale;  // inputs below tiny (subnormal) are multiplied by scale = 2^scale_log2
  int scale_log2;
};
constexpr LogConsts kLogF32 = {0.693359375, -2.12194440e-4, 4, 0x3f3504f3, 0x3f800000,
                               0x007fffff, 127, 23, 1.17549435e-38, 33554432.0, 25};
constexpr LogConsts kLogF64 = {0.6931471526622772, 2.7897668064547076e-08, 9,
                               0x3fe6a09e667f3bcd, 0x3ff0000000000000, 0x000fffffffffffff,
                               1023, 52, 2.2250738585072014e-308, 18014398509481984.0, 54};

// tanh(|x|) = |x| + |x| * z * P(z), z = x^2, for |x| < 0.55: P from tanh's Taylor series (the
// coefficient of x^(2n-1) is 2^(2n) (2^(2n) - 1) B(2n) / (2n)!, n = 2, 3, ...; 8 terms for
// float32, 17 for float64 reach the last bit at 0.55). Above, with e = exp(-2|x|) <= 1/3,
// tanh(|x|) = (1 - e) / (1 + e), which magnifies exp's error by at most e / (1 - e) = 1/2;
// either way the sign of x is put back. tanh(-0.0) = -0.0; large |x| give +-1; NaN stays NaN.
constexpr double kTanhTaylor[] = {
    -0.3333333333333333,     0.13333333333333333,    -0.05396825396825397,
    0.021869488536155203,    -0.008863235529902197,  0.003592128036572481,
    -0.0014558343870513183,  0.000590027440945586,   -0.00023912911424355248,
    9.691537956929451e-05,   -3.927832388331683e-05, 1.5918905069328964e-05,
    -6.451689215655431e-06,  2.6147711512907546e-06, -1.0597268320104654e-06,
    4.294911078273806e-07,   -1.7406618963571648e-07};
constexpr double kTanhSmall = 0.55;

// erf(x) = |x| * P(x^2) (erf's Taylor series) for |x| < 0.75, with x's sign put back; above,
// erf(|x|) = 1 - exp(-a^2) * g(a), a = min(|x|, kErfHigh), g(a) = erfc(a) * exp(a^2) by [8/8]
// Pade approximants around 1.6 (a < 2.5) and 4.2 for float64, one [5/5] around 2.0 for
// float32, derived from g's Taylor series at those points. Past kErfHigh erf rounds to 1.
// Measured against a wider erf: see kFusedErfRelTol (kernels/fused.h).
constexpr double kErfTaylor[] = {
    1.1283791670955126, -0.37612638903183754, 0.11283791670955126, -0.026866170645131252,
    0.005223977625442188, -0.0008548327023450853, 0.00012055332981789664, -1.492565035840625e-05,
    1.6462114365889248e-06, -1.6365844691234924e-07, 1.4807192815879218e-08,
    -1.2290555301717928e-09, 9.422759064650411e-11, -6.7113668551641105e-12,
    4.4632242632864775e-13, -2.7835162072109215e-14};
constexpr double kErfPadeP32[] = {
    0.25539567631050575, 0.22830748039061466, 0.0819783876277245, 0.013801669484055867,
    0.0009164827705497377, -5.694296503364426e-09};
constexpr double kErfPadeQ32[] = {
    1.0, 1.3120971626657085, 0.7059750274929828, 0.1950254991719484, 0.02771361341379366,
    0.001624218251538217};
constexpr double kErfPadeP64a[] = {
    0.305952992270941, 0.4351109977750992, 0.2794014358931334, 0.10398445191108266,
    0.0241193496368383, 0.0034786650350180463, 0.0002885694644763803, 1.061939628694131e-05,
    9.217777878702325e-13};
constexpr double kErfPadeQ64a[] = {
    1.0, 1.9102300169237785, 1.6264905781110643, 0.8069614357934535, 0.25539746714813316,
    0.05285625799845089, 0.006993555993748312, 0.0005415910537173234, 1.8822442351539903e-05};
constexpr double kErfPadeP64b[] = {
    0.13080849231114205, 0.1429045523516192, 0.0681093724401161, 0.018346394974492773,
    0.003015471201195025, 0.00030238619090849737, 1.7129999496685583e-05, 4.2296489562128617e-07,
    1.4815865900332022e-17};
constexpr double kErfPadeQ64b[] = {
    1.0, 1.3186634979573562, 0.7689574662815724, 0.2590733282655398, 0.05517668910259642,
    0.007609445648828422, 0.0006638613729957327, 3.351081372696623e-05, 7.49685759359555e-07};
struct ErfPade {
  double center;
  const double* p;
  const double* q;
  int degree;  // of both
};
constexpr ErfPade kErfPades32[] = {{2.0, kErfPadeP32, kErfPadeQ32, 5}};
constexpr ErfPade kErfPades64[] = {{1.6, kErfPadeP64a, kErfPadeQ64a, 8},
                                   {4.2, kErfPadeP64b, kErfPadeQ64b, 8}};
constexpr double kErfSmall = 0.75, kErfSplit64 = 2.5;

class Gen {
 public:
  Gen(x86::Compiler& cc, const FusedProgram& p, uint64_t mask, bool avx512)
      : cc_(cc), p_(p), mask_(mask), f32_(p.dtype == DType::kFloat32), avx512_(avx512) {}

  Error Emit() {
    FuncNode* fn = cc_.addFunc(FuncSignatureT<void, void*, void*, int64_t>(CallConvId::kHost));
    x86::Gp out = cc_.newIntPtr("out"), ins = cc_.newIntPtr("ins"), n = cc_.newInt64("n");
    fn->setArg(0, out);
    fn->setArg(1, ins);
    fn->setArg(2, n);
    for (int k = 0; k < p_.num_inputs; ++k) {
      ptrs_.push_back(cc_.newIntPtr("in%d", k));
      cc_.mov(ptrs_.back(), x86::ptr(ins, k * 8));
    }
    const int lanes = (f32_ ? 8 : 4) * (avx512_ ? 2 : 1);
    i_ = cc_.newInt64("i");
    x86::Gp vec_end = cc_.newInt64("vec_end");
    cc_.xor_(i_, i_);
    cc_.mov(vec_end, n);
    cc_.and_(vec_end, -lanes);
    Label vec_loop = cc_.newLabel(), tail = cc_.newLabel(), tail_loop = cc_.newLabel(),
          done = cc_.newLabel();
    cc_.cmp(i_, vec_end);
    cc_.jge(tail);
    cc_.bind(vec_loop);
    wide_ = true;
    Store(out, Body());
    cc_.add(i_, lanes);
    cc_.cmp(i_, vec_end);
    cc_.jl(vec_loop);
    cc_.bind(tail);
    cc_.cmp(i_, n);
    cc_.jge(done);
    cc_.bind(tail_loop);
    wide_ = false;
    Store(out, Body());
    cc_.inc(i_);
    cc_.cmp(i_, n);
    cc_.jl(tail_loop);
    cc_.bind(done);
    cc_.endFunc();
    return cc_.finalize();
  }

 private:
  uint32_t shift() const { return f32_ ? 2 : 3; }
  // The loop being generated runs on zmm registers (AVX-512 encodings).
  bool zmm() const { return wide_ && avx512_; }
  // Pool entries are as wide as the widest register.
  int pool_bytes() const { return avx512_ ? 64 : 32; }
  x86::Vec NewVec() {
    if (zmm()) return cc_.newZmm();
    if (wide_) return cc_.newYmm();
    return cc_.newXmm();
  }
  // A pool entry holding `v` in every lane of the program's dtype.
  x86::Mem Splat(double v) {
    uint8_t bytes[64];
    for (int l = 0; l < pool_bytes() / (f32_ ? 4 : 8); ++l) {
      if (f32_) {
        float f = static_cast<float>(v);
        std::memcpy(bytes + 4 * l, &f, 4);
      } else {
        std::memcpy(bytes + 8 * l, &v, 8);
      }
    }
    return Pool(bytes);
  }
  // A pool entry of `v` in every 32-bit lane.
  x86::Mem SplatI32(int32_t v) {
    uint8_t bytes[64];
    for (int l = 0; l < pool_bytes() / 4; ++l) std::memcpy(bytes + 4 * l, &v, 4);
    return Pool(bytes);
  }
  // A pool entry of `v` in every lane of the program's dtype, as an integer bit pattern.
  x86::Mem SplatBits(int64_t v) {
    uint8_t bytes[64];
    const int size = f32_ ? 4 : 8;
    for (int l = 0; l < pool_bytes() / size; ++l) std::memcpy(bytes + size * l, &v, size);
    return Pool(bytes);
  }
  x86::Mem SignMask() {
    uint8_t bytes[64] = {};
    const int size = f32_ ? 4 : 8;
    for (int l = 0; l < pool_bytes() / size; ++l) bytes[size * l + size - 1] = 0x80;
    return Pool(bytes);
  }
  x86::Mem AllOnes() {
    uint8_t bytes[64];
    std::memset(bytes, 0xFF, sizeof(bytes));
    return Pool(bytes);
  }
  x86::Mem Pool(const uint8_t* bytes) {
    x86::Mem m = cc_.newConst(ConstPoolScope::kLocal, bytes, pool_bytes());
    m.setSize(zmm() ? 64 : wide_ ? 32 : 16);
    return m;
  }
  // d = a where the k mask is set (a merge-masked move).
  void TakeWhere(const x86::KReg& k, const x86::Vec& d, const x86::Vec& a) {
    f32_ ? cc_.k(k).vmovaps(d, a) : cc_.k(k).vmovapd(d, a);
  }

  x86::Vec Load(const FusedOperand& o, const std::vector<x86::Vec>& temps) {
    if (o.kind == FusedOperand::kTemp) return temps[o.index];
    x86::Vec v = NewVec();
    if (o.kind == FusedOperand::kConst) {
      if (f32_) cc_.vmovups(v, Splat(o.value));
      else cc_.vmovupd(v, Splat(o.value));
      return v;
    }
    const x86::Gp& p = ptrs_[o.index];
    const bool contiguous = (mask_ >> o.index) & 1;
    if (contiguous && wide_) {
      if (f32_) cc_.vmovups(v, x86::ptr(p, i_, shift()));
      else cc_.vmovupd(v, x86::ptr(p, i_, shift()));
    } else if (contiguous) {
      if (f32_) cc_.vmovss(v.xmm(), x86::ptr(p, i_, shift()));
      else cc_.vmovsd(v.xmm(), x86::ptr(p, i_, shift()));
    } else if (wide_) {
      if (f32_) cc_.vbroadcastss(v, x86::ptr(p));
      else cc_.vbroadcastsd(v, x86::ptr(p));
    } else {
      if (f32_) cc_.vmovss(v.xmm(), x86::ptr(p));
      else cc_.vmovsd(v.xmm(), x86::ptr(p));
    }
    return v;
  }

  void Store(const x86::Gp& out, const x86::Vec& v) {
    x86::Mem m = x86::ptr(out, i_, shift());
    if (wide_) {
      if (f32_) cc_.vmovups(m, v);
      else cc_.vmovupd(m, v);
    } else {
      if (f32_) cc_.vmovss(m, v.xmm());
      else cc_.vmovsd(m, v.xmm());
    }
  }

  x86::Vec Body() {
    std::vector<x86::Vec> temps;
    for (const FusedInst& in : p_.insts) {
      x86::Vec a = Load(in.a, temps);
      x86::Vec d = NewVec();
      switch (in.op) {
        case FusedOpcode::kAdd:
        case FusedOpcode::kSub:
        case FusedOpcode::kMul:
        case FusedOpcode::kDiv: {
          x86::Vec b = Load(in.b, temps);
          Arith(in.op, d, a, b);
          break;
        }
        case FusedOpcode::kNeg:
          if (zmm()) cc_.vpxord(d, a, SignMask());  // vxorps on zmm needs AVX512DQ
          else if (f32_) cc_.vxorps(d, a, SignMask());
          else cc_.vxorpd(d, a, SignMask());
          break;
        case FusedOpcode::kRelu: {
          // As the eager kernel (and np.maximum(a, 0)): a > 0 ? a : 0, except that NaN stays
          // NaN. maxps returns its second operand unless the first is greater, which gives
          // +0.0 for -0.0 and for NaN; NaN lanes are then taken from `a`.
          x86::Vec zero = NewVec();
          if (zmm()) {
            x86::KReg nan = cc_.newKw();
            cc_.vpxord(zero, zero, zero);
            f32_ ? cc_.vmaxps(d, a, zero) : cc_.vmaxpd(d, a, zero);
            f32_ ? cc_.vcmpps(nan, a, a, 3) : cc_.vcmppd(nan, a, a, 3);  // a is NaN
            TakeWhere(nan, d, a);
            break;
          }
          x86::Vec nan = NewVec();
          cc_.vxorps(zero, zero, zero);
          if (f32_) {
            cc_.vmaxps(d, a, zero);
            cc_.vcmpps(nan, a, a, 3);  // unordered: a is NaN
            cc_.vblendvps(d, d, a, nan);
          } else {
            cc_.vmaxpd(d, a, zero);
            cc_.vcmppd(nan, a, a, 3);
            cc_.vblendvpd(d, d, a, nan);
          }
          break;
        }
        case FusedOpcode::kExp: Exp(d, a); break;
        case FusedOpcode::kLog: Log(d, a); break;
        case FusedOpcode::kTanh: Tanh(d, a); break;
        case FusedOpcode::kErf: Erf(d, a); break;
        case FusedOpcode::kSigmoid: Sigmoid(d, a); break;
        case FusedOpcode::kSqrt:
          f32_ ? cc_.vsqrtps(d, a) : cc_.vsqrtpd(d, a);
          break;
        case FusedOpcode::kRsqrt: {
          // 1 / sqrt(a), both correctly rounded: the eager kernel's two operations.
          x86::Vec one = NewVec();
          f32_ ? cc_.vmovups(one, Splat(1.0)) : cc_.vmovupd(one, Splat(1.0));
          f32_ ? cc_.vsqrtps(d, a) : cc_.vsqrtpd(d, a);
          f32_ ? cc_.vdivps(d, one, d) : cc_.vdivpd(d, one, d);
          break;
        }
        case FusedOpcode::kMaximum:
        case FusedOpcode::kMinimum: {
          // As loops::Maximum/Minimum: a when a > b (a < b) or a is NaN, else b. maxps(a, b)
          // gives a only when a > b (never for NaN), so NaN in a is blended in afterwards.
          x86::Vec b = Load(in.b, temps);
          const bool max = in.op == FusedOpcode::kMaximum;
          if (zmm()) {
            x86::KReg nan = cc_.newKw();
            if (f32_) max ? cc_.vmaxps(d, a, b) : cc_.vminps(d, a, b);
            else max ? cc_.vmaxpd(d, a, b) : cc_.vminpd(d, a, b);
            f32_ ? cc_.vcmpps(nan, a, a, 3) : cc_.vcmppd(nan, a, a, 3);  // a is NaN
            TakeWhere(nan, d, a);
            break;
          }
          x86::Vec nan = NewVec();
          if (f32_) {
            max ? cc_.vmaxps(d, a, b) : cc_.vminps(d, a, b);
            cc_.vcmpps(nan, a, a, 3);  // unordered: a is NaN
            cc_.vblendvps(d, d, a, nan);
          } else {
            max ? cc_.vmaxpd(d, a, b) : cc_.vminpd(d, a, b);
            cc_.vcmppd(nan, a, a, 3);
            cc_.vblendvpd(d, d, a, nan);
          }
          break;
        }
        case FusedOpcode::kGreater:
        case FusedOpcode::kGreaterEqual:
        case FusedOpcode::kLess:
        case FusedOpcode::kLessEqual:
        case FusedOpcode::kEqual:
        case FusedOpcode::kNotEqual: {
          // Ordered predicates (false with a NaN operand), except not_equal (true).
          static constexpr uint8_t kPredicate[] = {0x1E /*GT_OQ*/, 0x1D /*GE_OQ*/,
                                                   0x11 /*LT_OQ*/, 0x12 /*LE_OQ*/,
                                                   0x00 /*EQ_OQ*/, 0x04 /*NEQ_UQ*/};
          const uint8_t pred = kPredicate[static_cast<int>(in.op) -
                                          static_cast<int>(FusedOpcode::kGreater)];
          x86::Vec b = Load(in.b, temps);
          if (zmm()) {  // the k mask as all-ones / zero lanes, as vcmpps gives on ymm
            x86::KReg k = cc_.newKw();
            f32_ ? cc_.vcmpps(k, a, b, pred) : cc_.vcmppd(k, a, b, pred);
            f32_ ? cc_.k(k).z().vmovdqu32(d, AllOnes()) : cc_.k(k).z().vmovdqu64(d, AllOnes());
            break;
          }
          f32_ ? cc_.vcmpps(d, a, b, pred) : cc_.vcmppd(d, a, b, pred);
          break;
        }
        case FusedOpcode::kWhere: {
          // blendv takes its last-but-one operand where the mask's sign bit is set.
          x86::Vec b = Load(in.b, temps), c = Load(in.c, temps);
          if (zmm()) {  // lanes of the mask are all ones or zero: any set bit selects b
            // d = c, then b where k is set. (A masked vblendmps reads d as well, as far as
            // the register allocator knows: an undefined d was reloaded from the stack with
            // a legacy SSE move, whose transition penalty made whole kernels ~10x slower.)
            x86::KReg k = cc_.newKw();
            f32_ ? cc_.vptestmd(k, a, a) : cc_.vptestmq(k, a, a);
            f32_ ? cc_.vmovaps(d, c) : cc_.vmovapd(d, c);
            TakeWhere(k, d, b);
            break;
          }
          f32_ ? cc_.vblendvps(d, c, b, a) : cc_.vblendvpd(d, c, b, a);
          break;
        }
      }
      temps.push_back(d);
    }
    return temps.back();
  }

  void Arith(FusedOpcode op, const x86::Vec& d, const x86::Vec& a, const x86::Vec& b) {
    switch (op) {
      case FusedOpcode::kAdd: f32_ ? cc_.vaddps(d, a, b) : cc_.vaddpd(d, a, b); break;
      case FusedOpcode::kSub: f32_ ? cc_.vsubps(d, a, b) : cc_.vsubpd(d, a, b); break;
      case FusedOpcode::kMul: f32_ ? cc_.vmulps(d, a, b) : cc_.vmulpd(d, a, b); break;
      case FusedOpcode::kDiv: f32_ ? cc_.vdivps(d, a, b) : cc_.vdivpd(d, a, b); break;
      default: break;
    }
  }

  void Exp(const x86::Vec& d, const x86::Vec& x) {
    const ExpConsts& c = f32_ ? kExpF32 : kExpF64;
    x86::Vec t = NewVec(), fx = NewVec(), r = NewVec(), p = NewVec(), tmp = NewVec();
    // Clamp; min/max return their second operand when either is NaN, so NaN stays NaN.
    cc_.vmovups(tmp, Splat(c.hi));
    f32_ ? cc_.vminps(t, tmp, x) : cc_.vminpd(t, tmp, x);
    cc_.vmovups(tmp, Splat(c.lo));
    f32_ ? cc_.vmaxps(t, tmp, t) : cc_.vmaxpd(t, tmp, t);
    f32_ ? cc_.vmulps(fx, t, Splat(c.log2e)) : cc_.vmulpd(fx, t, Splat(c.log2e));
    if (zmm()) {  // to nearest (vrndscale with scale 0 is vround)
      f32_ ? cc_.vrndscaleps(fx, fx, 0) : cc_.vrndscalepd(fx, fx, 0);
    } else {
      f32_ ? cc_.vroundps(fx, fx, 0) : cc_.vroundpd(fx, fx, 0);
    }
    f32_ ? cc_.vmulps(tmp, fx, Splat(c.ln2_hi)) : cc_.vmulpd(tmp, fx, Splat(c.ln2_hi));
    f32_ ? cc_.vsubps(r, t, tmp) : cc_.vsubpd(r, t, tmp);
    f32_ ? cc_.vmulps(tmp, fx, Splat(c.ln2_lo)) : cc_.vmulpd(tmp, fx, Splat(c.ln2_lo));
    f32_ ? cc_.vsubps(r, r, tmp) : cc_.vsubpd(r, r, tmp);
    // Horner: p = sum r^k / k!
    double fact = 1;
    for (int k = 2; k <= c.degree; ++k) fact *= k;
    f32_ ? cc_.vmovups(p, Splat(1.0 / fact)) : cc_.vmovupd(p, Splat(1.0 / fact));
    for (int k = c.degree - 1; k >= 0; --k) {
      fact = 1;
      for (int j = 2; j <= k; ++j) fact *= j;
      f32_ ? cc_.vmulps(p, p, r) : cc_.vmulpd(p, p, r);
      f32_ ? cc_.vaddps(p, p, Splat(1.0 / fact)) : cc_.vaddpd(p, p, Splat(1.0 / fact));
    }
    // 2^n1 * 2^n2 with n1 = n >> 1, n2 = n - n1, built in the exponent field.
    x86::Vec s1 = NewVec(), s2 = NewVec();
    if (f32_) {
      x86::Vec n = NewVec(), n1 = NewVec();
      cc_.vcvtps2dq(n, fx);
      cc_.vpsrad(n1, n, 1);
      cc_.vpsubd(n, n, n1);
      cc_.vpaddd(n1, n1, SplatI32(c.bias));
      cc_.vpaddd(n, n, SplatI32(c.bias));
      cc_.vpslld(s1, n1, c.mantissa_bits);
      cc_.vpslld(s2, n, c.mantissa_bits);
      cc_.vmulps(d, p, s1);
      cc_.vmulps(d, d, s2);
    } else {
      // 8 / 4 / 1 doubles -> as many int32 in a ymm or xmm, then widened to int64 lanes.
      const bool on_zmm = zmm();
      x86::Vec n = on_zmm ? x86::Vec(cc_.newYmm()) : x86::Vec(cc_.newXmm());
      x86::Vec n1 = on_zmm ? x86::Vec(cc_.newYmm()) : x86::Vec(cc_.newXmm());
      const bool wide = wide_, avx512 = avx512_;
      wide_ = on_zmm;  // int32 work happens in ymm (zmm loop) or xmm registers
      avx512_ = false;
      x86::Mem bias = SplatI32(c.bias);
      wide_ = wide;
      avx512_ = avx512;
      cc_.vcvtpd2dq(n, fx);
      cc_.vpsrad(n1, n, 1);
      cc_.vpsubd(n, n, n1);
      cc_.vpaddd(n1, n1, bias);
      cc_.vpaddd(n, n, bias);
      cc_.vpmovsxdq(s1, n1);
      cc_.vpmovsxdq(s2, n);
      cc_.vpsllq(s1, s1, c.mantissa_bits);
      cc_.vpsllq(s2, s2, c.mantissa_bits);
      cc_.vmulpd(d, p, s1);
      cc_.vmulpd(d, d, s2);
    }
  }

  // ax = |x| and sign = x's sign bit (integer logic on zmm: vandps there needs AVX512DQ).
  void SplitSign(const x86::Vec& x, const x86::Vec& ax, const x86::Vec& sign) {
    x86::Vec sm = NewVec();
    f32_ ? cc_.vmovups(sm, SignMask()) : cc_.vmovupd(sm, SignMask());
    if (zmm()) {
      f32_ ? cc_.vpandnd(ax, sm, x) : cc_.vpandnq(ax, sm, x);
      f32_ ? cc_.vpandd(sign, sm, x) : cc_.vpandq(sign, sm, x);
    } else {
      f32_ ? cc_.vandnps(ax, sm, x) : cc_.vandnpd(ax, sm, x);
      f32_ ? cc_.vandps(sign, sm, x) : cc_.vandpd(sign, sm, x);
    }
  }
  // d |= sign (a value of d with its sign bit clear takes the sign SplitSign took).
  void OrSign(const x86::Vec& d, const x86::Vec& sign) {
    if (zmm()) f32_ ? cc_.vpord(d, d, sign) : cc_.vporq(d, d, sign);
    else f32_ ? cc_.vorps(d, d, sign) : cc_.vorpd(d, d, sign);
  }

  // d = src where `x pred y` holds (vcmpps/vcmppd predicate), else d unchanged.
  void SelectWhere(const x86::Vec& d, const x86::Vec& src, const x86::Vec& x, const x86::Vec& y,
                   uint32_t pred) {
    if (zmm()) {
      x86::KReg k = cc_.newKw();
      f32_ ? cc_.vcmpps(k, x, y, pred) : cc_.vcmppd(k, x, y, pred);
      TakeWhere(k, d, src);
      return;
    }
    x86::Vec m = NewVec();
    f32_ ? cc_.vcmpps(m, x, y, pred) : cc_.vcmppd(m, x, y, pred);
    f32_ ? cc_.vblendvps(d, d, src, m) : cc_.vblendvpd(d, d, src, m);
  }

  void Log(const x86::Vec& d, const x86::Vec& x) {
    const LogConsts& c = f32_ ? kLogF32 : kLogF64;
    auto splat = [&](double v) {
      x86::Vec r = NewVec();
      f32_ ? cc_.vmovups(r, Splat(v)) : cc_.vmovupd(r, Splat(v));
      return r;
    };
    auto add = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vaddps(o, a, b) : cc_.vaddpd(o, a, b);
    };
    auto sub = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vsubps(o, a, b) : cc_.vsubpd(o, a, b);
    };
    auto mul = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vmulps(o, a, b) : cc_.vmulpd(o, a, b);
    };
    // Subnormal inputs: scaled into the normal range, their exponent corrected below.
    x86::Vec xs = NewVec(), scaled = NewVec(), adj = NewVec(), zero = NewVec();
    x86::Vec tiny = splat(c.tiny);
    f32_ ? cc_.vmovaps(xs, x) : cc_.vmovapd(xs, x);
    mul(scaled, x, splat(c.scale));
    for (const x86::Vec& v : {zero, adj}) {
      if (zmm()) cc_.vpxord(v, v, v);  // vxorps on zmm needs AVX512DQ
      else cc_.vxorps(v, v, v);
    }
    SelectWhere(xs, scaled, x, tiny, 0x11);                          // x < tiny (LT_OQ)
    SelectWhere(adj, splat(c.scale_log2), x, tiny, 0x11);
    // Exponent and mantissa from the bits: adding one_bits - sqrt_half_bits carries into the
    // exponent exactly when the mantissa is at least sqrt(2)'s.
    x86::Vec ix = NewVec(), e = NewVec(), m = NewVec();
    if (f32_) {
      cc_.vpaddd(ix, xs, SplatBits(c.one_bits - c.sqrt_half_bits));
      cc_.vpsrld(e, ix, c.mantissa_bits);
      cc_.vpsubd(e, e, SplatBits(c.bias));
      cc_.vcvtdq2ps(e, e);
      zmm() ? cc_.vpandd(m, ix, SplatBits(c.mantissa_mask))
            : cc_.vpand(m, ix, SplatBits(c.mantissa_mask));
      cc_.vpaddd(m, m, SplatBits(c.sqrt_half_bits));
    } else {
      // The biased exponent (0..2047) becomes a double by the 2^52 trick: its bits OR those
      // of 2^52 are the double 2^52 + e_biased.
      cc_.vpaddq(ix, xs, SplatBits(c.one_bits - c.sqrt_half_bits));
      cc_.vpsrlq(e, ix, c.mantissa_bits);
      zmm() ? cc_.vporq(e, e, SplatBits(0x4330000000000000))
            : cc_.vpor(e, e, SplatBits(0x4330000000000000));
      cc_.vsubpd(e, e, Splat(4503599627370496.0 + c.bias));
      zmm() ? cc_.vpandq(m, ix, SplatBits(c.mantissa_mask))
            : cc_.vpand(m, ix, SplatBits(c.mantissa_mask));
      cc_.vpaddq(m, m, SplatBits(c.sqrt_half_bits));
    }
    sub(e, e, adj);
    // f, s, z = s^2, R(z), hfsq = f^2/2.
    x86::Vec f = NewVec(), s = NewVec(), z = NewVec(), r = NewVec(), hfsq = NewVec();
    x86::Vec t = NewVec();
    x86::Vec one = splat(1.0);
    sub(f, m, one);
    add(t, f, splat(2.0));
    f32_ ? cc_.vdivps(s, f, t) : cc_.vdivpd(s, f, t);
    mul(z, s, s);
    const double top = 2.0 / (2 * c.terms + 1);
    f32_ ? cc_.vmovups(r, Splat(top)) : cc_.vmovupd(r, Splat(top));
    for (int k = c.terms - 1; k >= 1; --k) {
      mul(r, r, z);
      const double coef = 2.0 / (2 * k + 1);
      f32_ ? cc_.vaddps(r, r, Splat(coef)) : cc_.vaddpd(r, r, Splat(coef));
    }
    mul(r, r, z);
    mul(hfsq, f, f);
    f32_ ? cc_.vmulps(hfsq, hfsq, Splat(0.5)) : cc_.vmulpd(hfsq, hfsq, Splat(0.5));
    // e*ln2_hi + (f - (hfsq - (s*(hfsq + R) + e*ln2_lo)))
    add(t, hfsq, r);
    mul(t, s, t);
    x86::Vec lo = NewVec();
    f32_ ? cc_.vmulps(lo, e, Splat(c.ln2_lo)) : cc_.vmulpd(lo, e, Splat(c.ln2_lo));
    add(t, t, lo);
    sub(t, hfsq, t);
    sub(t, f, t);
    f32_ ? cc_.vmulps(lo, e, Splat(c.ln2_hi)) : cc_.vmulpd(lo, e, Splat(c.ln2_hi));
    add(d, lo, t);
    // log(+inf) = +inf, log(+-0) = -inf, log(x < 0) = NaN, log(NaN) = NaN: sqrt gives the
    // NaNs (NaN inputs pass through).
    x86::Vec inf = splat(std::numeric_limits<double>::infinity());
    SelectWhere(d, inf, x, inf, 0x00);                               // x == inf (EQ_OQ)
    x86::Vec neg_inf = splat(-std::numeric_limits<double>::infinity());
    SelectWhere(d, neg_inf, x, zero, 0x00);                          // x == 0
    x86::Vec nan = NewVec();
    f32_ ? cc_.vsqrtps(nan, x) : cc_.vsqrtpd(nan, x);
    SelectWhere(d, nan, x, zero, 0x19);                              // !(x >= 0) (NGE_UQ)
  }

  // 1 / (1 + e) for x >= 0, e / (1 + e) below (NaN too), e = exp(-|x|): the eager kernel's
  // two branches, so exp never overflows and tiny results keep their precision.
  void Sigmoid(const x86::Vec& d, const x86::Vec& x) {
    x86::Vec nax = NewVec(), e = NewVec(), den = NewVec(), q = NewVec(), zero = NewVec();
    // -|x|: the sign bit set (vorps/vxorps on zmm need AVX512DQ: the integer forms there).
    if (zmm()) {
      cc_.vpord(nax, x, SignMask());  // bitwise: the lane width does not matter unmasked
      cc_.vpxord(zero, zero, zero);
    } else {
      f32_ ? cc_.vorps(nax, x, SignMask()) : cc_.vorpd(nax, x, SignMask());
      cc_.vxorps(zero, zero, zero);
    }
    Exp(e, nax);
    f32_ ? cc_.vmovups(q, Splat(1.0)) : cc_.vmovupd(q, Splat(1.0));
    f32_ ? cc_.vaddps(den, q, e) : cc_.vaddpd(den, q, e);
    f32_ ? cc_.vdivps(d, e, den) : cc_.vdivpd(d, e, den);
    f32_ ? cc_.vdivps(q, q, den) : cc_.vdivpd(q, q, den);
    SelectWhere(d, q, x, zero, 0x1D);  // x >= 0 (GE_OQ: not for NaN)
  }

  void Tanh(const x86::Vec& d, const x86::Vec& x) {
    auto mul = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vmulps(o, a, b) : cc_.vmulpd(o, a, b);
    };
    x86::Vec ax = NewVec(), sign = NewVec();
    SplitSign(x, ax, sign);
    // Small |x|: the odd series.
    const int terms = f32_ ? 8 : 17;
    x86::Vec z = NewVec(), p = NewVec();
    mul(z, x, x);
    const double top = kTanhTaylor[terms - 1];
    f32_ ? cc_.vmovups(p, Splat(top)) : cc_.vmovupd(p, Splat(top));
    for (int k = terms - 2; k >= 0; --k) {
      mul(p, p, z);
      f32_ ? cc_.vaddps(p, p, Splat(kTanhTaylor[k])) : cc_.vaddpd(p, p, Splat(kTanhTaylor[k]));
    }
    mul(p, p, z);
    mul(p, p, ax);
    f32_ ? cc_.vaddps(p, p, ax) : cc_.vaddpd(p, p, ax);
    // Large |x|: (1 - e) / (1 + e) with e = exp(-2|x|), then the sign.
    x86::Vec t = NewVec(), e = NewVec(), num = NewVec(), den = NewVec(), one = NewVec();
    f32_ ? cc_.vmovups(t, Splat(-2.0)) : cc_.vmovupd(t, Splat(-2.0));
    mul(t, ax, t);
    Exp(e, t);
    f32_ ? cc_.vmovups(one, Splat(1.0)) : cc_.vmovupd(one, Splat(1.0));
    f32_ ? cc_.vsubps(num, one, e) : cc_.vsubpd(num, one, e);
    f32_ ? cc_.vaddps(den, one, e) : cc_.vaddpd(den, one, e);
    f32_ ? cc_.vdivps(d, num, den) : cc_.vdivpd(d, num, den);
    x86::Vec small = NewVec();
    f32_ ? cc_.vmovups(small, Splat(kTanhSmall)) : cc_.vmovupd(small, Splat(kTanhSmall));
    SelectWhere(d, p, ax, small, 0x11);  // |x| < 0.55 (LT_OQ: not for NaN)
    // tanh(|x|) with x's sign (so tanh(-0.0) is -0.0).
    OrSign(d, sign);
  }

  void Erf(const x86::Vec& d, const x86::Vec& x) {
    auto load = [&](const x86::Vec& r, double v) {
      f32_ ? cc_.vmovups(r, Splat(v)) : cc_.vmovupd(r, Splat(v));
    };
    auto mul = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vmulps(o, a, b) : cc_.vmulpd(o, a, b);
    };
    auto sub = [&](const x86::Vec& o, const x86::Vec& a, const x86::Vec& b) {
      f32_ ? cc_.vsubps(o, a, b) : cc_.vsubpd(o, a, b);
    };
    // r = sum_k c[k] * u^k by Horner.
    auto horner = [&](const x86::Vec& r, const double* c, int degree, const x86::Vec& u) {
      load(r, c[degree]);
      for (int k = degree - 1; k >= 0; --k) {
        mul(r, r, u);
        f32_ ? cc_.vaddps(r, r, Splat(c[k])) : cc_.vaddpd(r, r, Splat(c[k]));
      }
    };
    x86::Vec ax = NewVec(), sign = NewVec(), sm = NewVec();
    SplitSign(x, ax, sign);
    load(sm, -0.0);
    // Small |x|: |x| * P(x^2).
    x86::Vec z = NewVec(), small = NewVec();
    mul(z, x, x);
    horner(small, kErfTaylor, f32_ ? 9 : 15, z);
    mul(small, small, ax);
    // Larger: 1 - exp(-a^2) * g(a); vmin returns its second operand for NaN, so NaN stays.
    x86::Vec a = NewVec(), hi = NewVec();
    load(hi, f32_ ? 4.0 : 6.0);
    f32_ ? cc_.vminps(a, hi, ax) : cc_.vminpd(a, hi, ax);
    x86::Vec g = NewVec();
    const ErfPade* pades = f32_ ? kErfPades32 : kErfPades64;
    const int count = f32_ ? 1 : 2;
    for (int i = count - 1; i >= 0; --i) {  // the last first: the ones before replace it below
      const ErfPade& pd = pades[i];
      x86::Vec u = NewVec(), num = NewVec(), den = NewVec(), gi = i == count - 1 ? g : NewVec();
      x86::Vec c = NewVec();
      load(c, pd.center);
      sub(u, a, c);
      horner(num, pd.p, pd.degree, u);
      horner(den, pd.q, pd.degree, u);
      f32_ ? cc_.vdivps(gi, num, den) : cc_.vdivpd(gi, num, den);
      if (i != count - 1) {
        x86::Vec split = NewVec();
        load(split, kErfSplit64);
        SelectWhere(g, gi, a, split, 0x11);  // a < split
      }
    }
    x86::Vec t = NewVec(), e = NewVec(), one = NewVec();
    mul(t, a, a);
    if (zmm()) f32_ ? cc_.vpxord(t, t, sm) : cc_.vpxorq(t, t, sm);
    else f32_ ? cc_.vxorps(t, t, sm) : cc_.vxorpd(t, t, sm);
    Exp(e, t);
    mul(e, e, g);
    load(one, 1.0);
    sub(d, one, e);
    x86::Vec bound = NewVec();
    load(bound, kErfSmall);
    SelectWhere(d, small, ax, bound, 0x11);  // |x| < 0.75 (not for NaN)
    OrSign(d, sign);
  }

  x86::Compiler& cc_;
  const FusedProgram& p_;
  uint64_t mask_;
  bool f32_;
  bool avx512_;
  bool wide_ = true;
  x86::Gp i_;
  std::vector<x86::Gp> ptrs_;
};

}  // namespace

bool HostHasAvx2() { return cpu::Host().avx2; }

bool HostHasAvx512() { return cpu::Host().avx512f; }

absl::StatusOr<FusedKernel::Fn> GenerateFusedX86(const FusedProgram& program,
                                                 uint64_t stride_mask, bool avx512) {
  if (!HostHasAvx2()) return absl::UnimplementedError("fused: the CPU has no AVX2");
  if (avx512 && !HostHasAvx512()) return absl::UnimplementedError("fused: the CPU has no AVX-512");
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  CodeHolder code;
  code.init(Runtime().environment());
  RecordError errors;
  code.setErrorHandler(&errors);
  x86::Compiler cc(&code);
  Error err = Gen(cc, program, stride_mask, avx512).Emit();
  if (err == kErrorOk) err = errors.first;
  FusedKernel::Fn fn = nullptr;
  if (err == kErrorOk) err = Runtime().add(&fn, &code);
  if (err != kErrorOk) {
    return absl::InternalError(absl::StrCat("fused: code generation failed: ",
                                            DebugUtils::errorAsString(err), " ", errors.text));
  }
  return fn;
}

void ReleaseFusedCode(FusedKernel::Fn fn) {
  std::lock_guard<std::mutex> lock(RuntimeMutex());
  Runtime().release(fn);
}

}  // namespace pijit
