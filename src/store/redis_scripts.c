/*
 * redis_scripts.c - the Redis store's Lua scripts (redis_scripts.h).
 *
 * Conventions: a blob key's value ends with a trailer of
 * MCPX_REDIS_TRAILER bytes ("MCPXB2", its TTL in milliseconds as 17
 * digits, its version's 16 hex digits, "\n"; redis_scripts.h); a record
 * is a hash with its version v (decimal), its data d and its TTL t;
 * versions of new records come from Redis's clock (microseconds), later
 * ones add 1. Scripts return 0 or a negative number for a refusal the
 * caller maps to an errno.
 */
#include "redis_scripts.h"

#define STR_(x) #x
#define STR(x) STR_(x)
/* The trailer's length as the scripts spell it. */
#define T STR(MCPX_REDIS_TRAILER)

/* KEYS: upload key, blob key, blob name set, lease key.
 * ARGV: name, ttl ms, max count, max bytes, lease owner ("" none), blob key
 * prefix, total length (trailer included), [the whole value: no upload].
 * Returns 0; -1 the lease is not the owner's; -2 count cap; -3 byte cap;
 * -4 the upload is not whole. */
const char mcpx_redis_put_commit[] =
    "local name, ttl = ARGV[1], tonumber(ARGV[2])\n"
    "local maxc, maxb, want = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[7])\n"
    "local inline = ARGV[8]\n"
    "local function drop() if not inline then redis.call('DEL', KEYS[1]) end end\n"
    "if ARGV[5] ~= '' and redis.call('GET', KEYS[4]) ~= ARGV[5] then drop() return -1 end\n"
    "if maxc > 0 or maxb > 0 then\n"
    "  local count, bytes = 0, 0\n"
    "  for _, n in ipairs(redis.call('SMEMBERS', KEYS[3])) do\n"
    "    if n ~= name then\n"
    "      local l = redis.call('STRLEN', ARGV[6] .. n)\n"
    "      if l > 0 then count = count + 1 bytes = bytes + l - " T "\n"
    "      else redis.call('SREM', KEYS[3], n) end\n"
    "    end\n"
    "  end\n"
    "  if maxc > 0 and count + 1 > maxc then drop() return -2 end\n"
    "  if maxb > 0 and bytes + want - " T " > maxb then drop() return -3 end\n"
    "end\n"
    "if inline then\n"
    "  redis.call('SET', KEYS[2], inline, 'PX', ttl)\n"
    "else\n"
    "  if redis.call('STRLEN', KEYS[1]) ~= want then drop() return -4 end\n"
    "  redis.call('RENAME', KEYS[1], KEYS[2])\n"
    "  redis.call('PEXPIRE', KEYS[2], ttl)\n"
    "end\n"
    "redis.call('SADD', KEYS[3], name)\n"
    "if redis.call('PTTL', KEYS[3]) < ttl then redis.call('PEXPIRE', KEYS[3], ttl) end\n"
    "return 0\n";

/* KEYS: blob key. Starts its TTL again; returns the TTL, or -2 when there
 * is no such blob. Reads only its trailer: a script never copies a blob's
 * bytes (Redis 7.0 takes about 6 ms per MiB to pass a string through Lua). */
const char mcpx_redis_touch[] =
    "local t = redis.call('GETRANGE', KEYS[1], -" T ", -1)\n"
    "if #t ~= " T " or string.sub(t, 1, 6) ~= 'MCPXB2' then return -2 end\n"
    "local ttl = tonumber(string.sub(t, 7, 23))\n"
    "redis.call('PEXPIRE', KEYS[1], ttl)\n"
    "return ttl\n";

/* KEYS: blob key, blob name set, lease key. ARGV: name, lease owner ("").
 * Returns 1 deleted, 0 none, -1 the lease is not the owner's. */
const char mcpx_redis_delete[] =
    "if ARGV[2] ~= '' and redis.call('GET', KEYS[3]) ~= ARGV[2] then return -1 end\n"
    "redis.call('SREM', KEYS[2], ARGV[1])\n"
    "return redis.call('DEL', KEYS[1])\n";

/* KEYS: blob name set. ARGV: blob key prefix, the most entries to return
 * (so the reply stays small however many names the set holds). Returns
 * name, bytes, ms left, ttl for each live blob (pruning the set). */
const char mcpx_redis_list_blobs[] = "local out, most = {}, tonumber(ARGV[2])\n"
                                     "for _, n in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
                                     "  if #out >= 4 * most then break end\n"
                                     "  local k = ARGV[1] .. n\n"
                                     "  local l = redis.call('STRLEN', k)\n"
                                     "  if l >= " T " then\n"
                                     "    local t = redis.call('GETRANGE', k, -" T ", -1)\n"
                                     "    out[#out + 1] = n\n"
                                     "    out[#out + 1] = l - " T "\n"
                                     "    out[#out + 1] = redis.call('PTTL', k)\n"
                                     "    out[#out + 1] = tonumber(string.sub(t, 7, 23)) or 0\n"
                                     "  else redis.call('SREM', KEYS[1], n) end\n"
                                     "end\n"
                                     "return out\n";

/* KEYS: record name set. ARGV: record key prefix, the most entries to
 * return. Returns name, bytes, ms left, ttl, version (a string) for each
 * live record. */
const char mcpx_redis_list_records[] = "local out, most = {}, tonumber(ARGV[2])\n"
                                       "for _, n in ipairs(redis.call('SMEMBERS', KEYS[1])) do\n"
                                       "  if #out >= 5 * most then break end\n"
                                       "  local k = ARGV[1] .. n\n"
                                       "  local r = redis.call('HMGET', k, 'v', 't')\n"
                                       "  if r[1] then\n"
                                       "    out[#out + 1] = n\n"
                                       "    out[#out + 1] = redis.call('HSTRLEN', k, 'd')\n"
                                       "    out[#out + 1] = redis.call('PTTL', k)\n"
                                       "    out[#out + 1] = tonumber(r[2]) or 0\n"
                                       "    out[#out + 1] = r[1]\n"
                                       "  else redis.call('SREM', KEYS[1], n) end\n"
                                       "end\n"
                                       "return out\n";

/* KEYS: record key. Returns {} or {version, data, ttl, ms left}. */
const char mcpx_redis_record_get[] =
    "local r = redis.call('HMGET', KEYS[1], 'v', 'd', 't')\n"
    "if not r[1] then return {} end\n"
    "return {r[1], r[2] or '', r[3] or '0', redis.call('PTTL', KEYS[1])}\n";

/* KEYS: record key, record name set. ARGV: name, data, expected version
 * ("any", "0": create only, or the version), ttl ms, max count, record
 * key prefix. Returns {0, new version} or {-1 exists | -2 absent | -3 other
 * version | -4 count cap, version found}. */
const char mcpx_redis_record_put[] =
    "local cur = redis.call('HGET', KEYS[1], 'v')\n"
    "local e = ARGV[3]\n"
    "if e == '0' then\n"
    "  if cur then return {-1, cur} end\n"
    "elseif e ~= 'any' then\n"
    "  if not cur then return {-2, '0'} end\n"
    "  if cur ~= e then return {-3, cur} end\n"
    "end\n"
    "local maxc = tonumber(ARGV[5])\n"
    "if not cur and maxc > 0 then\n"
    "  local count = 0\n"
    "  for _, n in ipairs(redis.call('SMEMBERS', KEYS[2])) do\n"
    "    if n ~= ARGV[1] then\n"
    "      if redis.call('EXISTS', ARGV[6] .. n) == 1 then count = count + 1\n"
    "      else redis.call('SREM', KEYS[2], n) end\n"
    "    end\n"
    "  end\n"
    "  if count >= maxc then return {-4, '0'} end\n"
    "end\n"
    "local v\n"
    "if cur then v = string.format('%.0f', tonumber(cur) + 1)\n"
    "else local t = redis.call('TIME') v = t[1] .. string.format('%06d', tonumber(t[2])) end\n"
    "redis.call('HSET', KEYS[1], 'v', v, 'd', ARGV[2], 't', ARGV[4])\n"
    "redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
    "redis.call('SADD', KEYS[2], ARGV[1])\n"
    "if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then\n"
    "  redis.call('PEXPIRE', KEYS[2], ARGV[4])\n"
    "end\n"
    "return {0, v}\n";

/* KEYS: record key, record name set. ARGV: name, expected version ("any"
 * or the version). Returns {0 | -2 absent | -3 other version, version}. */
const char mcpx_redis_record_delete[] =
    "local cur = redis.call('HGET', KEYS[1], 'v')\n"
    "if not cur then return {-2, '0'} end\n"
    "if ARGV[2] ~= 'any' and cur ~= ARGV[2] then return {-3, cur} end\n"
    "redis.call('DEL', KEYS[1])\n"
    "redis.call('SREM', KEYS[2], ARGV[1])\n"
    "return {0, cur}\n";

/* KEYS: lease key. ARGV: owner, ttl ms. Returns {1} taken, or {0, holder,
 * ms left}. */
const char mcpx_redis_lease_acquire[] =
    "local cur = redis.call('GET', KEYS[1])\n"
    "if cur and cur ~= ARGV[1] then return {0, cur, redis.call('PTTL', KEYS[1])} end\n"
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
    "return {1}\n";

/* KEYS: lease key. ARGV: owner, ttl ms. Returns 1 renewed, 0 not ours. */
const char mcpx_redis_lease_renew[] = "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
                                      "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
                                      "return 1\n";

/* KEYS: lease key. ARGV: owner. Returns 1 released, 0 not ours. */
const char mcpx_redis_lease_release[] =
    "if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\n"
    "redis.call('DEL', KEYS[1])\n"
    "return 1\n";

/* KEYS: lease key. Returns {} or {holder, ms left}. */
const char mcpx_redis_lease_peek[] = "local cur = redis.call('GET', KEYS[1])\n"
                                     "if not cur then return {} end\n"
                                     "return {cur, redis.call('PTTL', KEYS[1])}\n";
