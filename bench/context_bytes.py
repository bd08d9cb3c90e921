"""Bytes of a sequence's context a generated token moves, from a GGUF's metadata alone: what a
bandwidth bound adds to the weights when it counts context traffic (the same quantity `lumen bench
profile` calls context bytes, there from the ops themselves).

- A Transformer reads every cached position's keys and values once per token: layers x KV heads
  x (key + value length) x 2 bytes (the default f16 cache) per position; over a tgN run from an
  empty context the positions read average (N + 1) / 2.
- A Mamba 2 model reads and writes each layer's state once per token, whatever the position:
  2 x layers x ((conv kernel - 1) x conv channels + state size x inner size) x 4 bytes (f32).

Other architectures (RWKV, hybrids, ALiBi models with their own layouts) give None: their context
traffic is not modelled here.
"""
from gguf import GGUFReader


def _scalar(reader, key):
    field = reader.fields.get(key)
    if field is None or not field.data:
        return None
    value = field.parts[field.data[0]]
    return int(value[0]) if len(value) == 1 else None


def context_bytes_per_token(path: str, n_gen: int):
    reader = GGUFReader(path)
    arch_field = reader.fields["general.architecture"]
    arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
    get = lambda key: _scalar(reader, f"{arch}.{key}")  # noqa: E731
    layers = get("block_count")
    if arch == "mamba2":
        inner, state, kernel, groups = get("ssm.inner_size"), get("ssm.state_size"), get("ssm.conv_kernel"), \
            get("ssm.group_count")
        conv_channels = inner + 2 * groups * state
        return 2 * layers * ((kernel - 1) * conv_channels + state * inner) * 4
    heads, kv_heads = get("attention.head_count"), get("attention.head_count_kv")
    if not heads or get("ssm.state_size") or arch.startswith("rwkv"):
        return None
    kv_heads = kv_heads or heads
    head_dim = get("attention.key_length") or get("embedding_length") // heads
    value_dim = get("attention.value_length") or head_dim
    per_position = layers * kv_heads * (head_dim + value_dim) * 2
    return per_position * (n_gen + 1) / 2
