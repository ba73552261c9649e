// MD5 of many independent inputs at once. With AVX-512 (checked at run time)
// sixteen inputs are hashed side by side, one per 32-bit SIMD lane, and a lane
// that finishes takes the next input; with AVX2 only, eight per register (two
// registers side by side for more than 12 inputs); otherwise, and for fewer
// than 3 inputs on AVX2, each input goes through OpenSSL in turn. The digests
// are the same either way (RFC 1321).
//
// For the receive path: each reply brings up to 10 bodies and 10 attribute
// encodings to check, and MD5 is a serial chain per input, so one input at a
// time leaves most of the core idle. A single large input gains nothing here:
// use Md5() for that.
#pragma once

#include <span>
#include <string_view>

#include "common/crypto.h"

namespace dlq {

// out[i] = MD5(inputs[i]); `out` has inputs.size() elements. Thread-safe.
void Md5Many(std::span<const std::string_view> inputs, std::span<Md5Digest> out);

// Whether Md5Many uses SIMD lanes on this CPU (for diagnostics and tests).
bool Md5ManyUsesLanes();

// The lane implementation itself (the widest this CPU has); only call it when
// Md5ManyUsesLanes() is true (tests compare it with OpenSSL).
void Md5ManyLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out);

// The eight-lane (AVX2) implementation, which Md5ManyLanes uses on CPUs
// without AVX-512; only call it when Md5ManyHasEightLanes() is true (tests and
// benchmarks run it on AVX-512 machines too).
bool Md5ManyHasEightLanes();
void Md5ManyEightLanes(std::span<const std::string_view> inputs, std::span<Md5Digest> out);

}  // namespace dlq
