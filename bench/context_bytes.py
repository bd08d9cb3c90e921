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


def weight_bytes_per_token(path: str) -> int:
    """The weight bytes one decoded token reads, as `lumen bench profile` counts them
    (profile_run.h, WeightStream): every tensor but an untied token embedding (a lookup reads one
    row), and of a MoE layer's expert tensors (`*_exps`) only the share its token chooses
    (expert_used_count / expert_count)."""
    reader = GGUFReader(path)
    arch_field = reader.fields["general.architecture"]
    arch = bytes(arch_field.parts[arch_field.data[0]]).decode()
    experts = _scalar(reader, f"{arch}.expert_count") or 0
    used = _scalar(reader, f"{arch}.expert_used_count") or 0
    names = {t.name for t in reader.tensors}
    total = 0.0
    for t in reader.tensors:
        if t.name == "token_embd.weight" and "output.weight" in names:
            continue
        share = used / experts if experts and used and "_exps." in t.name else 1.0
        total += int(t.n_bytes) * share
    return int(total)
