"""hydroplane: GPU compute kernels from Python through SPIR-V we emit ourselves.

Layers (see DESIGN.md in the shared folder and docs/architecture.md):
``spirv`` (SPIR-V as data), ``ref`` (CPU reference executor), ``vk`` (Vulkan runtime),
``lang`` (kernel language), ``kernels`` (library), ``isa`` (native GPU ISA reference).
"""

__version__ = "0.1.0"
