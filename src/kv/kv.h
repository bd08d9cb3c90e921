#pragma once
// The kv module: paged KV cache bookkeeping (block pool, block tables, copy-on-write, prefix
// cache). It decides which block holds which position; the model runner moves the bytes.
#include "kv/block_hash.h"
#include "kv/block_pool.h"
#include "kv/sequence_blocks.h"
