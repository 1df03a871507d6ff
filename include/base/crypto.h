/*
 * crypto.h - the only module that includes OpenSSL: hashing, HMAC, constant-
 * time comparison and randomness for auth, sessions and the audit log.
 */
#ifndef MCPX_CRYPTO_H
#define MCPX_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#define MCPX_SHA256_LEN 32

void mcpx_sha256(const void *data, size_t len, uint8_t out[MCPX_SHA256_LEN]);
/* Lower-case hex of the SHA-256 of data; hex must hold 65 bytes. */
void mcpx_sha256_hex(const void *data, size_t len, char hex[65]);
void mcpx_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		      uint8_t out[MCPX_SHA256_LEN]);
/* Constant-time equality of two equal-length buffers. */
int mcpx_ct_equal(const void *a, const void *b, size_t len);
/* Cryptographically secure random bytes; 0 or -EIO. */
int mcpx_random(void *buf, size_t len);
/* Overwrites memory in a way the compiler may not elide. */
void mcpx_wipe(void *p, size_t len);

#endif
