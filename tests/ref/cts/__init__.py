"""The CTS-style cooperative-matrix matrix: GLSL sources, case tables and the compile helper."""
