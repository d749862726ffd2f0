"""The root of hydroplane's exceptions: every error a user can act on derives from it.

Each layer defines its own subclasses (`spirv.SpirvError`, `vk.VulkanError`, ...). This
module imports nothing, so every layer may import it without breaking the layer order.
"""


class HydroplaneError(Exception):
    """An error hydroplane reports to its user: says what went wrong and where."""
