/*
 * crypto.c - thin wrappers over OpenSSL so no other module includes it.
 */
#include "crypto.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>

void mcpx_sha256(const void *data, size_t len, uint8_t out[MCPX_SHA256_LEN])
{
	unsigned int outlen = MCPX_SHA256_LEN;
	EVP_Digest(data, len, out, &outlen, EVP_sha256(), NULL);
}

void mcpx_sha256_hex(const void *data, size_t len, char hex[65])
{
	uint8_t d[MCPX_SHA256_LEN];
	mcpx_sha256(data, len, d);
	for (int i = 0; i < MCPX_SHA256_LEN; i++)
		snprintf(hex + 2 * i, 3, "%02x", d[i]);
	hex[64] = '\0';
}

void mcpx_hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		      uint8_t out[MCPX_SHA256_LEN])
{
	unsigned int outlen = MCPX_SHA256_LEN;
	HMAC(EVP_sha256(), key, (int)keylen, data, len, out, &outlen);
}

int mcpx_ct_equal(const void *a, const void *b, size_t len)
{
	return CRYPTO_memcmp(a, b, len) == 0;
}

int mcpx_random(void *buf, size_t len)
{
	return RAND_bytes(buf, (int)len) == 1 ? 0 : -EIO;
}

void mcpx_wipe(void *p, size_t len)
{
	OPENSSL_cleanse(p, len);
}
