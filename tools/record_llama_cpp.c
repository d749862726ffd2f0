/* The llama.cpp side of tools/record_llama_cpp.py: tokenizes, scores teacher-forced and decodes greedily.
 *
 * Built against Debian's libllama-dev by the Python driver and run as `record_llama_cpp MODEL.gguf`.
 * Requests come on stdin, one a line, the text in hex (UTF-8 bytes):
 *   tok SPECIAL HEX        -> "tokens ID ..." (add_special=true, parse_special=SPECIAL)
 *   run SPECIAL N HEX      -> "tokens ID ...", one "pos I TOP1 L1 TOP2 L2 ... (TOPK pairs)" line per prompt
 *                             position (logits after that token, one token per llama_decode call),
 *                             then "gen ID ..." (N greedy tokens, stopped early at an end-of-generation token)
 *                             and "text HEX" (llama_detokenize of the generated ids)
 *   piece ID ...           -> "pieces HEX|HEX..." (llama_token_to_piece, special=false)
 * Every reply ends with a line "end".
 */
#include <llama.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOPK 5

static void log_quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

static int hex_decode(const char *hex, char *out) {
    int n = 0;
    for (; hex[0] && hex[1] && hex[0] != '\n'; hex += 2) {
        unsigned v;
        sscanf(hex, "%2x", &v);
        out[n++] = (char)v;
    }
    out[n] = 0;
    return n;
}

static void hex_print(const char *bytes, int n) {
    for (int i = 0; i < n; i++) printf("%02x", (unsigned char)bytes[i]);
}

static int tokenize(const struct llama_vocab *vocab, const char *text, int len, int special, llama_token *ids, int cap) {
    int n = llama_tokenize(vocab, text, len, ids, cap, true, special != 0);
    if (n < 0) { fprintf(stderr, "tokenize: %d tokens do not fit\n", -n); exit(1); }
    printf("tokens");
    for (int i = 0; i < n; i++) printf(" %d", ids[i]);
    printf("\n");
    return n;
}

/* The TOPK largest logits, largest first. */
static void top_logits(const float *logits, int n_vocab, int *ids, float *vals) {
    for (int k = 0; k < TOPK; k++) { ids[k] = -1; vals[k] = -INFINITY; }
    for (int t = 0; t < n_vocab; t++) {
        float v = logits[t];
        if (v <= vals[TOPK - 1]) continue;
        int k = TOPK - 1;
        while (k > 0 && vals[k - 1] < v) { vals[k] = vals[k - 1]; ids[k] = ids[k - 1]; k--; }
        vals[k] = v; ids[k] = t;
    }
}

int main(int argc, char **argv) {
    if (argc != 2) { fprintf(stderr, "usage: %s MODEL.gguf\n", argv[0]); return 2; }
    llama_log_set(log_quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) { fprintf(stderr, "cannot load %s\n", argv[1]); return 1; }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = 512; cp.n_batch = 1; cp.n_ubatch = 1; cp.n_threads = 2; cp.n_threads_batch = 2;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) { fprintf(stderr, "cannot make a context\n"); return 1; }

    static char line[1 << 16], text[1 << 15], buf[1 << 15];
    static llama_token ids[4096];
    while (fgets(line, sizeof line, stdin)) {
        int special = 0, n_gen = 0, off = 0;
        if (sscanf(line, "tok %d %n", &special, &off) == 1) {
            int len = hex_decode(line + off, text);
            tokenize(vocab, text, len, special, ids, 4096);
        } else if (sscanf(line, "run %d %d %n", &special, &n_gen, &off) == 2) {
            int len = hex_decode(line + off, text);
            int n = tokenize(vocab, text, len, special, ids, 4096);
            llama_memory_clear(llama_get_memory(ctx), true);
            int top_ids[TOPK]; float top_vals[TOPK];
            for (int i = 0; i < n; i++) {
                if (llama_decode(ctx, llama_batch_get_one(&ids[i], 1)) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
                top_logits(llama_get_logits_ith(ctx, -1), n_vocab, top_ids, top_vals);
                printf("pos %d", i);
                for (int k = 0; k < TOPK; k++) printf(" %d %.6f", top_ids[k], top_vals[k]);
                printf("\n");
            }
            llama_token gen[4096];
            int n_out = 0;
            llama_token next = top_ids[0];
            while (n_out < n_gen) {
                gen[n_out++] = next;
                if (llama_vocab_is_eog(vocab, next)) break;
                if (llama_decode(ctx, llama_batch_get_one(&gen[n_out - 1], 1)) != 0) { fprintf(stderr, "decode failed\n"); return 1; }
                top_logits(llama_get_logits_ith(ctx, -1), n_vocab, top_ids, top_vals);
                next = top_ids[0];
            }
            printf("gen");
            for (int i = 0; i < n_out; i++) printf(" %d", gen[i]);
            printf("\ntext ");
            int m = llama_detokenize(vocab, gen, n_out, buf, sizeof buf, false, false);
            hex_print(buf, m < 0 ? 0 : m);
            printf("\n");
        } else if (strncmp(line, "piece", 5) == 0) {
            char *p = line + 5;
            printf("pieces ");
            int first = 1;
            while (1) {
                char *end;
                long id = strtol(p, &end, 10);
                if (end == p) break;
                p = end;
                int m = llama_token_to_piece(vocab, (llama_token)id, buf, sizeof buf, 0, false);
                if (!first) printf("|");
                first = 0;
                hex_print(buf, m < 0 ? 0 : m);
            }
            printf("\n");
        } else {
            fprintf(stderr, "unknown request: %s", line);
            return 2;
        }
        printf("end\n");
        fflush(stdout);
    }
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
