// bloom.h -- the edge filter of an out-edge segment (issue 15's edge
// lookup): a split-block Bloom filter (Putze, Sanders and Singler's
// blocked filter, as Parquet's "SBBF" lays it out) over the file's
// (src, dst) pairs, so that a lookup of an edge skips a file that holds
// none of its versions with one cache line read, instead of the file's
// vertex table and a binary search in src's edges.
//
// A block is 8 words of 32 bits (32 bytes); a pair sets one bit in each
// word of the one block it hashes to. Blocks are sized at kBloomBitsPerPair
// bits per distinct pair: about 1% of pairs a file does not hold pass.
//
// INVARIANT (no false negatives): every pair Add was given passes MayHold
// with the same block count. The filter is stored little-endian as it is
// in memory (the core runs on little-endian machines only, as the whole
// segment format assumes).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gt {

constexpr uint64_t kBloomBitsPerPair = 10;
constexpr uint64_t kBloomBlockWords = 8;  // of 32 bits: 32 bytes a block

// Blocks for n distinct pairs (at least 1).
inline uint64_t BloomBlocks(uint64_t n) {
  const uint64_t bits = n * kBloomBitsPerPair;
  const uint64_t b = (bits + 32 * kBloomBlockWords - 1) / (32 * kBloomBlockWords);
  return b == 0 ? 1 : b;
}

// The pair's 64-bit hash: src and dst mixed (a multiply-xorshift finalizer,
// as splitmix64's) so that ids in sequence spread over the blocks.
inline uint64_t BloomHash(uint64_t src, uint64_t dst) {
  uint64_t h = src * 0x9e3779b97f4a7c15ULL ^ (dst + 0x632be59bd9b4e019ULL);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 29;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 32;
  return h;
}

// The first word of h's block among nblocks (the high half of h times
// nblocks: no division, and uniform).
inline uint64_t BloomBlock(uint64_t h, uint64_t nblocks) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(h) * nblocks) >> 64) * kBloomBlockWords;
}

// The bit of word i that h sets: the top 5 bits of the low half of h times
// an odd salt per word (Parquet's salts).
inline uint32_t BloomBit(uint64_t h, int i) {
  static constexpr uint32_t kSalt[kBloomBlockWords] = {0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
                                                       0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U};
  return uint32_t{1} << ((static_cast<uint32_t>(h) * kSalt[i]) >> 27);
}

inline void BloomAdd(uint32_t *words, uint64_t nblocks, uint64_t src, uint64_t dst) {
  const uint64_t h = BloomHash(src, dst);
  uint32_t *b = words + BloomBlock(h, nblocks);
  for (int i = 0; i < static_cast<int>(kBloomBlockWords); i++) b[i] |= BloomBit(h, i);
}

// False only when Add was never given (src, dst).
inline bool BloomMayHold(const uint32_t *words, uint64_t nblocks, uint64_t src, uint64_t dst) {
  const uint64_t h = BloomHash(src, dst);
  const uint32_t *b = words + BloomBlock(h, nblocks);
  for (int i = 0; i < static_cast<int>(kBloomBlockWords); i++)
    if ((b[i] & BloomBit(h, i)) == 0) return false;
  return true;
}

}  // namespace gt
