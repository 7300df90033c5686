/* util/sha256.c: SHA-256 (FIPS 180-4) of a byte string. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util.h"

/* ---- SHA-256 (FIPS 180-4, section 6.2) ------------------------------- */

/* First 32 bits of the fractional parts of the cube roots of the first
 * 64 primes (FIPS 180-4, 4.2.2). */
static const uint32_t sha_k[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u,
    0x3956c25bu, 0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u,
    0xd807aa98u, 0x12835b01u, 0x243185beu, 0x550c7dc3u,
    0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u, 0xc19bf174u,
    0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau,
    0x983e5152u, 0xa831c66du, 0xb00327c8u, 0xbf597fc7u,
    0xc6e00bf3u, 0xd5a79147u, 0x06ca6351u, 0x14292967u,
    0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu, 0x53380d13u,
    0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u,
    0xd192e819u, 0xd6990624u, 0xf40e3585u, 0x106aa070u,
    0x19a4c116u, 0x1e376c08u, 0x2748774cu, 0x34b0bcb5u,
    0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu, 0x682e6ff3u,
    0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u
};

/* Initial hash value (FIPS 180-4, 5.3.3). */
static const uint32_t sha_h0[8] = {
    0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u, 0xa54ff53au,
    0x510e527fu, 0x9b05688cu, 0x1f83d9abu, 0x5be0cd19u
};

static uint32_t rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32u - n));
}

/* Process one 64-byte block into the hash state h. */
static void sha_block(uint32_t h[8], const unsigned char *blk)
{
    uint32_t w[64], a, b, c, d, e, f, g, hh, t1, t2;
    int t;

    for (t = 0; t < 16; t++)
        w[t] = (uint32_t)blk[4 * t] << 24 | (uint32_t)blk[4 * t + 1] << 16 |
               (uint32_t)blk[4 * t + 2] << 8 | (uint32_t)blk[4 * t + 3];
    for (t = 16; t < 64; t++) {
        uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
        uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
        w[t] = w[t - 16] + s0 + w[t - 7] + s1;
    }
    a = h[0]; b = h[1]; c = h[2]; d = h[3];
    e = h[4]; f = h[5]; g = h[6]; hh = h[7];
    for (t = 0; t < 64; t++) {
        uint32_t big1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
        uint32_t ch = (e & f) ^ (~e & g);
        uint32_t big0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
        uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
        t1 = hh + big1 + ch + sha_k[t] + w[t];
        t2 = big0 + maj;
        hh = g; g = f; f = e; e = d + t1;
        d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d;
    h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}


void util_sha256_hex(const void *data, size_t n, char out[65])
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *p = data;
    unsigned char tail[128];
    uint32_t h[8];
    uint64_t bits = (uint64_t)n * 8u;
    size_t rest, tlen, i;

    memcpy(h, sha_h0, sizeof h);
    for (i = 0; i + 64 <= n; i += 64)
        sha_block(h, p + i);
    /* padding: 0x80, zeros, 64-bit big-endian length (5.1.1) */
    rest = n - i;
    memset(tail, 0, sizeof tail);
    if (rest > 0)
        memcpy(tail, p + i, rest);
    tail[rest] = 0x80;
    tlen = rest + 1 + 8 <= 64 ? 64 : 128;
    for (i = 0; i < 8; i++)
        tail[tlen - 1 - i] = (unsigned char)(bits >> (8 * i));
    sha_block(h, tail);
    if (tlen == 128)
        sha_block(h, tail + 64);
    for (i = 0; i < 32; i++) {
        unsigned v = (unsigned)(h[i / 4] >> (24 - 8 * (i % 4))) & 0xffu;
        out[2 * i] = hex[v >> 4];
        out[2 * i + 1] = hex[v & 15u];
    }
    out[64] = '\0';
}
