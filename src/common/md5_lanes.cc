#include "common/md5_lanes.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers build their "undefined" vectors from themselves,
// which -Wmaybe-uninitialized reports in every intrinsic that uses one.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define DLQ_POP_DIAGNOSTIC 1
#endif
#include <immintrin.h>
#endif

namespace dlq {
namespace {

constexpr uint32_t kInit[4] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u};

// RFC 1321's table: K[i] = floor(2^32 * |sin(i + 1)|). (The known-answer
// tests of the RFC and the comparison with OpenSSL check it.)
const std::array<uint32_t, 64>& SineTable() {
  static const std::array<uint32_t, 64> kTable = [] {
    std::array<uint32_t, 64> t{};
    for (int i = 0; i < 64; ++i) t[i] = static_cast<uint32_t>(std::floor(std::fabs(std::sin(i + 1.0)) * 4294967296.0));
    return t;
  }();
  return kTable;
}

}  // namespace

#if defined(__x86_64__)
namespace {

#define DLQ_AVX512 __attribute__((target("avx512f")))

// One input in a lane: its whole 64-byte blocks are read where they are; the
// rest of it and the padding (0x80, zeros, the length in bits) are in `tail`.
struct Lane {
  int input = -1;  // -1: idle
  const unsigned char* data = nullptr;
  size_t full = 0;    // whole blocks in `data`
  size_t blocks = 0;  // full + 1 or 2 tail blocks
  size_t next = 0;    // the block to hash next
  alignas(64) unsigned char tail[128];

  void Assign(int index, std::string_view in) {
    input = index;
    data = reinterpret_cast<const unsigned char*>(in.data());
    full = in.size() / 64;
    const size_t rest = in.size() % 64;
    const size_t tail_blocks = rest < 56 ? 1 : 2;
    std::memset(tail, 0, sizeof(tail));
    if (rest > 0) std::memcpy(tail, data + full * 64, rest);
    tail[rest] = 0x80;
    const uint64_t bits = static_cast<uint64_t>(in.size()) * 8;
    std::memcpy(tail + tail_blocks * 64 - 8, &bits, 8);  // little-endian, as MD5 wants
    blocks = full + tail_blocks;
    next = 0;
  }
  const unsigned char* Block() const { return next < full ? data + next * 64 : tail + (next - full) * 64; }
};

// What an idle lane hashes; its result is never read.
alignas(64) constexpr unsigned char kIdleBlock[64] = {};

// Hands the inputs to lanes in order and writes each finished lane's digest.
struct Feeder {
  std::span<const std::string_view> inputs;
  std::span<Md5Digest> out;
  size_t next_input = 0;

  // The next input into `lane`, or idle when none is left.
  void Fill(Lane& lane) {
    lane.input = -1;
    if (next_input < inputs.size()) lane.Assign(static_cast<int>(next_input), inputs[next_input]), ++next_input;
  }
  // `state` is the lane's (a, b, c, d) after its last block.
  void Finish(Lane& lane, const std::array<uint32_t, 4>& state) {
    Md5Digest& digest = out[static_cast<size_t>(lane.input)];
    std::memcpy(digest.data(), state.data(), digest.size());  // little-endian, as MD5 wants
    Fill(lane);
  }
};

// Rows r[0..15] (lane l's 16 words) become columns m[0..15] (word k of
// every lane).
DLQ_AVX512 inline void Transpose(const __m512i r[16], __m512i m[16]) {
  __m512i t[16], u[16];
  for (size_t i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + w]: rows 4g..4g+3, words w, w+4, w+8, w+12 (one per 128-bit chunk).
  for (size_t g = 0; g < 4; ++g) {
    u[4 * g + 0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int w = 0; w < 4; ++w) {
    const __m512i lo01 = _mm512_shuffle_i32x4(u[w], u[4 + w], 0x44);
    const __m512i lo23 = _mm512_shuffle_i32x4(u[8 + w], u[12 + w], 0x44);
    const __m512i hi01 = _mm512_shuffle_i32x4(u[w], u[4 + w], 0xEE);
    const __m512i hi23 = _mm512_shuffle_i32x4(u[8 + w], u[12 + w], 0xEE);
    m[w] = _mm512_shuffle_i32x4(lo01, lo23, 0x88);
    m[4 + w] = _mm512_shuffle_i32x4(lo01, lo23, 0xDD);
    m[8 + w] = _mm512_shuffle_i32x4(hi01, hi23, 0x88);
    m[12 + w] = _mm512_shuffle_i32x4(hi01, hi23, 0xDD);
  }
}

// The four round functions as ternary-logic tables: imm = f(0xF0, 0xCC, 0xAA)
// with (b, c, d) in that order.
constexpr int kF = (0xF0 & 0xCC) | (~0xF0 & 0xAA);           // (b & c) | (~b & d)
constexpr int kG = ((0xF0 & 0xAA) | (0xCC & ~0xAA)) & 0xFF;  // (b & d) | (c & ~d)
constexpr int kH = 0xF0 ^ 0xCC ^ 0xAA;                       // b ^ c ^ d
constexpr int kI = (0xCC ^ (0xF0 | ~0xAA)) & 0xFF;           // c ^ (b | ~d)

template <int kFunction>
DLQ_AVX512 inline void Round(__m512i& a, __m512i& b, __m512i& c, __m512i& d, const __m512i m[16], const uint32_t* k,
                             const int* g, const int* s) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const __m512i f = _mm512_ternarylogic_epi32(b, c, d, kFunction);
    const __m512i km = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(k[i])), m[g[i]]);
    __m512i x = _mm512_add_epi32(_mm512_add_epi32(a, f), km);
    x = _mm512_add_epi32(_mm512_rolv_epi32(x, _mm512_set1_epi32(s[i % 4])), b);
    a = d;
    d = c;
    c = b;
    b = x;
  }
}

constexpr int kG0[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
constexpr int kG1[16] = {1, 6, 11, 0, 5, 10, 15, 4, 9, 14, 3, 8, 13, 2, 7, 12};
constexpr int kG2[16] = {5, 8, 11, 14, 1, 4, 7, 10, 13, 0, 3, 6, 9, 12, 15, 2};
constexpr int kG3[16] = {0, 7, 14, 5, 12, 3, 10, 1, 8, 15, 6, 13, 4, 11, 2, 9};
constexpr int kS0[4] = {7, 12, 17, 22};
constexpr int kS1[4] = {5, 9, 14, 20};
constexpr int kS2[4] = {4, 11, 16, 23};
constexpr int kS3[4] = {6, 10, 15, 21};

DLQ_AVX512 void HashLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  const uint32_t* k = SineTable().data();
  Lane lanes[16];
  Feeder feeder{inputs, out};
  for (Lane& lane : lanes) feeder.Fill(lane);
  const __m512i init_a = _mm512_set1_epi32(static_cast<int>(kInit[0]));
  const __m512i init_b = _mm512_set1_epi32(static_cast<int>(kInit[1]));
  const __m512i init_c = _mm512_set1_epi32(static_cast<int>(kInit[2]));
  const __m512i init_d = _mm512_set1_epi32(static_cast<int>(kInit[3]));
  __m512i sa = init_a, sb = init_b, sc = init_c, sd = init_d;
  for (;;) {
    __mmask16 active = 0;
    __m512i rows[16];
    for (int l = 0; l < 16; ++l) {
      const bool busy = lanes[l].input >= 0;
      if (busy) active = static_cast<__mmask16>(active | (1u << l));
      rows[l] = _mm512_loadu_si512(busy ? lanes[l].Block() : kIdleBlock);
    }
    if (active == 0) break;
    __m512i m[16];
    Transpose(rows, m);
    __m512i a = sa, b = sb, c = sc, d = sd;
    Round<kF>(a, b, c, d, m, k, kG0, kS0);
    Round<kG>(a, b, c, d, m, k + 16, kG1, kS1);
    Round<kH>(a, b, c, d, m, k + 32, kG2, kS2);
    Round<kI>(a, b, c, d, m, k + 48, kG3, kS3);
    sa = _mm512_mask_add_epi32(sa, active, sa, a);
    sb = _mm512_mask_add_epi32(sb, active, sb, b);
    sc = _mm512_mask_add_epi32(sc, active, sc, c);
    sd = _mm512_mask_add_epi32(sd, active, sd, d);

    __mmask16 done = 0;
    for (int l = 0; l < 16; ++l) {
      if (lanes[l].input >= 0 && ++lanes[l].next == lanes[l].blocks) done = static_cast<__mmask16>(done | (1u << l));
    }
    if (done == 0) continue;
    alignas(64) uint32_t words[4][16];
    _mm512_store_si512(words[0], sa);
    _mm512_store_si512(words[1], sb);
    _mm512_store_si512(words[2], sc);
    _mm512_store_si512(words[3], sd);
    for (int l = 0; l < 16; ++l) {
      if (done & (1u << l)) feeder.Finish(lanes[l], {words[0][l], words[1][l], words[2][l], words[3][l]});
    }
    sa = _mm512_mask_mov_epi32(sa, done, init_a);
    sb = _mm512_mask_mov_epi32(sb, done, init_b);
    sc = _mm512_mask_mov_epi32(sc, done, init_c);
    sd = _mm512_mask_mov_epi32(sd, done, init_d);
  }
}

#undef DLQ_AVX512

#define DLQ_AVX2 __attribute__((target("avx2")))

// Rows r[0..7] (8 words of 8 lanes) become columns: m[k] holds word k of
// every lane.
DLQ_AVX2 inline void Transpose8(const __m256i r[8], __m256i m[8]) {
  __m256i t[8], u[8];
  for (size_t i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_epi32(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_epi32(r[2 * i], r[2 * i + 1]);
  }
  // u[4g + w]: rows 4g..4g+3, words w and w+4 (one per 128-bit half).
  for (size_t g = 0; g < 2; ++g) {
    u[4 * g + 0] = _mm256_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 1] = _mm256_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    u[4 * g + 2] = _mm256_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    u[4 * g + 3] = _mm256_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
  for (int w = 0; w < 4; ++w) {
    m[w] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x20);
    m[4 + w] = _mm256_permute2x128_si256(u[w], u[4 + w], 0x31);
  }
}

// The round functions without ternary logic, each in two or three operations.
template <int kFunction>
DLQ_AVX2 inline __m256i RoundFunction8(__m256i b, __m256i c, __m256i d) {
  if constexpr (kFunction == 0) return _mm256_xor_si256(d, _mm256_and_si256(b, _mm256_xor_si256(c, d)));  // F
  if constexpr (kFunction == 1) return _mm256_xor_si256(c, _mm256_and_si256(d, _mm256_xor_si256(b, c)));  // G
  if constexpr (kFunction == 2) return _mm256_xor_si256(_mm256_xor_si256(b, c), d);                       // H
  // I: c ^ (b | ~d)
  return _mm256_xor_si256(c, _mm256_or_si256(b, _mm256_xor_si256(d, _mm256_set1_epi32(-1))));
}

// kGroups groups of eight lanes step by step side by side: one group's chain
// of dependent operations alone leaves the vector units partly idle, but
// with few inputs a second group only hashes idle lanes.
template <int kGroups>
struct State8 {
  __m256i a[kGroups], b[kGroups], c[kGroups], d[kGroups];
};

template <int kFunction, int kGroups>
DLQ_AVX2 inline void Round8(State8<kGroups>& st, const __m256i m[kGroups][16], const uint32_t* k, const int* g,
                            const int* s) {
#pragma GCC unroll 16
  for (int i = 0; i < 16; ++i) {
    const int shift = s[i % 4];
    const __m128i left = _mm_cvtsi32_si128(shift);
    const __m128i right = _mm_cvtsi32_si128(32 - shift);
    const __m256i ki = _mm256_set1_epi32(static_cast<int>(k[i]));
#pragma GCC unroll 2
    for (int q = 0; q < kGroups; ++q) {
      const __m256i f = RoundFunction8<kFunction>(st.b[q], st.c[q], st.d[q]);
      __m256i x = _mm256_add_epi32(_mm256_add_epi32(st.a[q], _mm256_add_epi32(ki, m[q][g[i]])), f);
      x = _mm256_or_si256(_mm256_sll_epi32(x, left), _mm256_srl_epi32(x, right));
      x = _mm256_add_epi32(x, st.b[q]);
      st.a[q] = st.d[q];
      st.d[q] = st.c[q];
      st.c[q] = st.b[q];
      st.b[q] = x;
    }
  }
}

// HashLanes with kGroups groups of eight AVX2 lanes (CPUs without AVX-512,
// such as AMD's before Zen 4).
template <int kGroups>
DLQ_AVX2 void HashLanes8(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  constexpr int kLanes = 8 * kGroups;
  const uint32_t* k = SineTable().data();
  Lane lanes[kLanes];
  Feeder feeder{inputs, out};
  for (Lane& lane : lanes) feeder.Fill(lane);
  const __m256i init[4] = {_mm256_set1_epi32(static_cast<int>(kInit[0])), _mm256_set1_epi32(static_cast<int>(kInit[1])),
                           _mm256_set1_epi32(static_cast<int>(kInit[2])),
                           _mm256_set1_epi32(static_cast<int>(kInit[3]))};
  State8<kGroups> saved;
  for (int q = 0; q < kGroups; ++q)
    saved.a[q] = init[0], saved.b[q] = init[1], saved.c[q] = init[2], saved.d[q] = init[3];
  for (;;) {
    bool any = false;
    __m256i m[kGroups][16];
    for (int q = 0; q < kGroups; ++q) {
      __m256i lo[8], hi[8];
      for (int l = 0; l < 8; ++l) {
        const Lane& lane = lanes[8 * q + l];
        const bool busy = lane.input >= 0;
        any = any || busy;
        const unsigned char* block = busy ? lane.Block() : kIdleBlock;
        lo[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block));
        hi[l] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block + 32));
      }
      Transpose8(lo, m[q]);
      Transpose8(hi, m[q] + 8);
    }
    if (!any) break;
    State8<kGroups> st = saved;
    Round8<0, kGroups>(st, m, k, kG0, kS0);
    Round8<1, kGroups>(st, m, k + 16, kG1, kS1);
    Round8<2, kGroups>(st, m, k + 32, kG2, kS2);
    Round8<3, kGroups>(st, m, k + 48, kG3, kS3);
    for (int q = 0; q < kGroups; ++q) {
      saved.a[q] = _mm256_add_epi32(saved.a[q], st.a[q]);
      saved.b[q] = _mm256_add_epi32(saved.b[q], st.b[q]);
      saved.c[q] = _mm256_add_epi32(saved.c[q], st.c[q]);
      saved.d[q] = _mm256_add_epi32(saved.d[q], st.d[q]);
    }

    alignas(32) int32_t done[kLanes] = {};
    bool any_done = false;
    for (int l = 0; l < kLanes; ++l) {
      if (lanes[l].input >= 0 && ++lanes[l].next == lanes[l].blocks) done[l] = -1, any_done = true;
    }
    if (!any_done) continue;
    for (int q = 0; q < kGroups; ++q) {
      alignas(32) uint32_t words[4][8];
      _mm256_store_si256(reinterpret_cast<__m256i*>(words[0]), saved.a[q]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(words[1]), saved.b[q]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(words[2]), saved.c[q]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(words[3]), saved.d[q]);
      for (int l = 0; l < 8; ++l) {
        if (done[8 * q + l] != 0) feeder.Finish(lanes[8 * q + l], {words[0][l], words[1][l], words[2][l], words[3][l]});
      }
      const __m256i reset = _mm256_load_si256(reinterpret_cast<const __m256i*>(&done[8 * static_cast<size_t>(q)]));
      saved.a[q] = _mm256_blendv_epi8(saved.a[q], init[0], reset);
      saved.b[q] = _mm256_blendv_epi8(saved.b[q], init[1], reset);
      saved.c[q] = _mm256_blendv_epi8(saved.c[q], init[2], reset);
      saved.d[q] = _mm256_blendv_epi8(saved.d[q], init[3], reset);
    }
  }
}

// One group up to kOneGroupMax inputs, two beyond (BM_Md5ManyReplyInputs).
constexpr size_t kOneGroupMax = 12;

void HashLanesAvx2(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  if (inputs.size() <= kOneGroupMax) {
    HashLanes8<1>(inputs, out);
  } else {
    HashLanes8<2>(inputs, out);
  }
}

#undef DLQ_AVX2

}  // namespace
#if defined(DLQ_POP_DIAGNOSTIC)
#pragma GCC diagnostic pop
#undef DLQ_POP_DIAGNOSTIC
#endif

namespace {
bool HasAvx512() {
  static const bool kHas = __builtin_cpu_supports("avx512f");
  return kHas;
}
bool HasAvx2() {
  static const bool kHas = __builtin_cpu_supports("avx2");
  return kHas;
}
}  // namespace

bool Md5ManyUsesLanes() {
  return HasAvx512() || HasAvx2();
}

namespace {
// With AVX2 only, two inputs hash faster through OpenSSL one after the other
// (BM_Md5ManyReplyInputs: a reply of one message).
bool LanesPayFor(size_t inputs) {
  return HasAvx512() ? inputs >= 2 : HasAvx2() && inputs >= 3;
}
}  // namespace

bool Md5ManyHasEightLanes() {
  return HasAvx2();
}

void Md5ManyLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  if (HasAvx512()) {
    HashLanes(inputs, out);
  } else {
    HashLanesAvx2(inputs, out);
  }
}

void Md5ManyEightLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  HashLanesAvx2(inputs, out);
}

#else

bool Md5ManyUsesLanes() {
  return false;
}

namespace {
bool LanesPayFor(size_t /*inputs*/) {
  return false;
}
}  // namespace

bool Md5ManyHasEightLanes() {
  return false;
}

void Md5ManyLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  for (size_t i = 0; i < inputs.size(); ++i) out[i] = Md5(inputs[i]);
}

void Md5ManyEightLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  Md5ManyLanes(inputs, out);
}

#endif

void Md5Many(std::span<const std::string_view> inputs, std::span<Md5Digest> out) {
  if (LanesPayFor(inputs.size())) {
    Md5ManyLanes(inputs, out);
    return;
  }
  for (size_t i = 0; i < inputs.size(); ++i) out[i] = Md5(inputs[i]);
}

}  // namespace dlq
