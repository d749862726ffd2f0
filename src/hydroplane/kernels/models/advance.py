"""`advance_kernel()`: the end of a decode step on the device, so that the next step (a replay of the captured one)
reads its inputs there and the host reads nothing: the sampled id becomes the next step's token, the position and
the KV cache's valid length move on by one, the sampling seed by one, and the id is kept in a history indexed by
its position (the host reads the ids of several steps at once).

    token[0] = sampled[0]; p = position[0] + 1; position[0] = p; kv_len[0] = p + 1; seed[0] += 1
    history[p] = sampled[0] (when p < history_n)

One invocation does it all (a workgroup of one). This module imports only the language.
"""

from hydroplane.lang import Buffer, kernel_source, readonly, s32, u32


@kernel_source(local_size=1, name="advance")
def advance_kernel(sampled: Buffer[s32, readonly], token: Buffer[s32], position: Buffer[s32], kv_len: Buffer[s32],
                   seed: Buffer[u32], history: Buffer[s32], history_n: s32):
    """The decode state moved on by one step (the module docstring)."""
    sampled_id = sampled[0]
    p = position[0] + 1
    token[0] = sampled_id
    position[0] = p
    kv_len[0] = p + 1
    seed[0] = seed[0] + u32(1)
    if p < history_n:
        history[p] = sampled_id
