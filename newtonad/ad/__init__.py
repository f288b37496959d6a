"""The AD core: IR, tracing, primitives and transforms."""
