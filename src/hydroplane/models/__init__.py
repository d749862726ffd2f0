"""hydroplane.models: GGUF checkpoints (architectures gemma3 and llama) run on hydroplane's ops.

    model = hydroplane.models.load("gemma3-270m")           # or a path to a .gguf file; device=None | "ref" | N
    ids = model.tokenize("The capital of France is")
    model.logits(ids)                                        # float32 (len, n_vocab)
    for text in model.stream_text("The capital of France is", 16): print(text, end="")

Modules: arch (the architectures as data), gguf_file (reading a checkpoint), tokenizer (SentencePiece as
llama.cpp runs it), reference (the float64 NumPy forward pass), model (the model on the ops: KV cache, generate),
packaged (the gemma3-270m package), commands (`hydroplane generate`). docs/models.md says more.
Layer: models (above ops and quant).
"""
