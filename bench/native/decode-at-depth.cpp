// Native llama.cpp decode at a deep context without prefilling it: llama-bench -d fills the context by a real
// prefill, which on the 8B shape at 32K takes hours on 2 cores. This program prefills a short seed, reads the
// sequence back as llama.cpp's own state (llama_state_seq_get_data), tiles the seed's K/V rows out to the
// requested depth and loads that state (llama_state_seq_set_data), then times decode as llama-bench's test_gen
// does, with llama-bench's context (flash attention on, as llama.cpp's default 'auto' resolves on CPU), thread
// pool and warm-up. Decode's work at depth does not depend on the cached values, only on how many cells
// attention reads. bench/native-depth.ts builds it against the cached llama.cpp build; bench:big checks it
// against llama-bench -d at a depth llama-bench can fill, in the same rounds.
//
// usage: decode-at-depth -m MODEL -t THREADS -d DEPTH -n GEN -ctk TYPE -ctv TYPE -r REPS [-seed N] [-fa 0|1]
// prints one JSON object: {"n_prompt":0,"n_gen":..,"n_depth":..,"avg_ts":..,"samples_ts":[..],"seed":..}
#include "ggml-cpu.h"
#include "ggml.h"
#include "llama.h"

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

static uint64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

static ggml_type kv_type(const std::string & s) {
    if (s == "f16") return GGML_TYPE_F16;
    if (s == "q8_0") return GGML_TYPE_Q8_0;
    if (s == "q4_0") return GGML_TYPE_Q4_0;
    throw std::runtime_error("unknown KV type '" + s + "' (f16, q8_0 or q4_0)");
}

// Reads the fields of a one-sequence state (llama-kv-cache.cpp state_write at this commit) in order.
struct reader {
    const uint8_t * p;
    const uint8_t * end;
    template <typename T> T get() {
        if (p + sizeof(T) > end) throw std::runtime_error("seed state ended early");
        T v;
        std::memcpy(&v, p, sizeof(T));
        p += sizeof(T);
        return v;
    }
    const uint8_t * take(size_t n) {
        if (p + n > end) throw std::runtime_error("seed state ended early");
        const uint8_t * at = p;
        p += n;
        return at;
    }
};

template <typename T> static void put(std::vector<uint8_t> & out, T v) {
    const uint8_t * b = reinterpret_cast<const uint8_t *>(&v);
    out.insert(out.end(), b, b + sizeof(T));
}

// A state of `depth` cells at positions 0..depth-1 whose K/V rows repeat the seed's, cell by cell.
static std::vector<uint8_t> tile_state(const std::vector<uint8_t> & seed, uint32_t n_seed, uint32_t depth) {
    reader r{ seed.data(), seed.data() + seed.size() };
    const uint32_t magic = r.get<uint32_t>();  // llama_context's header: its io magic and the sequence id
    if (r.get<int32_t>() != 0) throw std::runtime_error("seed state is not of sequence 0");
    if (r.get<uint32_t>() != 1) throw std::runtime_error("seed state has more than one stream");
    if (r.get<uint32_t>() != n_seed) throw std::runtime_error("seed state's cell count is not the seed's token count");
    for (uint32_t i = 0; i < n_seed; i++) {
        if (r.get<int32_t>() != (int32_t) i) throw std::runtime_error("seed state's cells are not at positions 0..n-1");
        if (r.get<uint32_t>() != 1 || r.get<int32_t>() != 0) throw std::runtime_error("seed state's cells are not of sequence 0 alone");
    }
    const uint32_t v_trans = r.get<uint32_t>();
    const uint32_t n_layer = r.get<uint32_t>();

    std::vector<uint8_t> out;
    put<uint32_t>(out, magic);
    put<int32_t>(out, 0);
    put<uint32_t>(out, 1);
    put<uint32_t>(out, depth);
    for (uint32_t i = 0; i < depth; i++) {
        put<int32_t>(out, (int32_t) i);
        put<uint32_t>(out, 1);
        put<int32_t>(out, 0);
    }
    put<uint32_t>(out, v_trans);
    put<uint32_t>(out, n_layer);
    // `rows` of `size` bytes per seed cell, repeated to one per tiled cell.
    auto tile = [&](const uint8_t * rows, size_t size) {
        const size_t at = out.size();
        out.resize(at + size * depth);
        for (uint32_t i = 0; i < depth; i++) std::memcpy(out.data() + at + size * i, rows + size * (i % n_seed), size);
    };
    // K of every layer (type, row size, one row per cell), then V: the same, or with flash attention off
    // transposed (type, element size, embedding size, then per embedding element one element per cell).
    for (int kv = 0; kv < 2; kv++) {
        for (uint32_t il = 0; il < n_layer; il++) {
            put<int32_t>(out, r.get<int32_t>());
            if (kv == 1 && v_trans) {
                const uint32_t el = r.get<uint32_t>();
                const uint32_t n_embd = r.get<uint32_t>();
                put<uint32_t>(out, el);
                put<uint32_t>(out, n_embd);
                for (uint32_t j = 0; j < n_embd; j++) tile(r.take((size_t) el * n_seed), el);
            } else {
                const uint64_t row = r.get<uint64_t>();
                put<uint64_t>(out, row);
                tile(r.take(row * n_seed), row);
            }
        }
    }
    if (r.p != r.end) throw std::runtime_error("seed state has bytes after its V rows (a layout this program does not know)");
    return out;
}

// llama-bench's test_gen: one token per decode, random tokens after the first.
static void gen(llama_context * ctx, int n_gen, int n_vocab, llama_token first) {
    llama_token token = first;
    for (int i = 0; i < n_gen; i++) {
        if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) throw std::runtime_error("decode failed");
        llama_synchronize(ctx);
        token = std::rand() % n_vocab;
    }
}

static void null_log(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    std::string model_path, ctk = "f16", ctv = "f16";
    int threads = 1, depth = 0, n_gen = 32, reps = 5, n_seed = 256, fa = 1;
    for (int i = 1; i < argc; i++) {
        const std::string a = argv[i];
        if (i + 1 >= argc) { fprintf(stderr, "error: %s needs a value\n", a.c_str()); return 2; }
        const char * v = argv[++i];
        if (a == "-m") model_path = v;
        else if (a == "-t") threads = std::atoi(v);
        else if (a == "-d") depth = std::atoi(v);
        else if (a == "-n") n_gen = std::atoi(v);
        else if (a == "-r") reps = std::atoi(v);
        else if (a == "-seed") n_seed = std::atoi(v);
        else if (a == "-fa") fa = std::atoi(v);
        else if (a == "-ctk") ctk = v;
        else if (a == "-ctv") ctv = v;
        else { fprintf(stderr, "error: unknown argument %s\n", a.c_str()); return 2; }
    }
    if (model_path.empty() || threads < 1 || depth < 1 || n_gen < 1 || reps < 1 || n_seed < 1 || n_seed > depth || (fa != 0 && fa != 1)) {
        fprintf(stderr, "error: need -m, and -t, -d, -n, -r >= 1, 1 <= -seed <= -d, -fa 0 or 1\n");
        return 2;
    }
    try {
        ggml_backend_load_all();
        llama_log_set(null_log, nullptr);
        llama_backend_init();

        llama_model * model = llama_model_load_from_file(model_path.c_str(), llama_model_default_params());
        if (!model) throw std::runtime_error("failed to load model " + model_path);
        const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
        const llama_vocab * vocab = llama_model_get_vocab(model);

        // llama-bench's context for -p 0 -n GEN -d DEPTH -fa 1: n_batch 2048, n_ubatch 512 (the defaults).
        llama_context_params cp = llama_context_default_params();
        cp.n_ctx           = depth + n_gen;
        cp.n_batch         = 2048;
        cp.n_ubatch        = 512;
        cp.type_k          = kv_type(ctk);
        cp.type_v          = kv_type(ctv);
        cp.flash_attn_type = fa ? LLAMA_FLASH_ATTN_TYPE_ENABLED : LLAMA_FLASH_ATTN_TYPE_DISABLED;
        cp.swa_full        = false;
        llama_context * ctx = llama_init_from_model(model, cp);
        if (!ctx) throw std::runtime_error("failed to create the context");

        // llama-bench's thread pool: defaults for n threads (poll 50, normal priority).
        ggml_threadpool_params tpp = ggml_threadpool_params_default(threads);
        ggml_threadpool * pool = ggml_threadpool_new(&tpp);
        if (!pool) throw std::runtime_error("thread pool create failed");
        llama_attach_threadpool(ctx, pool, nullptr);
        llama_set_n_threads(ctx, threads, threads);

        llama_memory_t mem = llama_get_memory(ctx);
        const llama_token first = llama_vocab_get_add_bos(vocab) ? llama_vocab_bos(vocab) : std::rand() % n_vocab;

        // llama-bench's warm-up generation run, on the empty cache.
        llama_memory_clear(mem, false);
        gen(ctx, 1, n_vocab, first);

        // The seed: a real prefill of n_seed random tokens, read back as llama.cpp's own sequence state.
        llama_memory_clear(mem, false);
        std::vector<llama_token> toks(n_seed);
        toks[0] = first;
        for (int i = 1; i < n_seed; i++) toks[i] = std::rand() % n_vocab;
        for (int at = 0; at < n_seed; at += 512) {
            const int n = std::min(512, n_seed - at);
            if (llama_decode(ctx, llama_batch_get_one(toks.data() + at, n)) != 0) throw std::runtime_error("seed prefill failed");
        }
        llama_synchronize(ctx);
        std::vector<uint8_t> seed(llama_state_seq_get_size(ctx, 0));
        if (llama_state_seq_get_data(ctx, seed.data(), seed.size(), 0) != seed.size()) throw std::runtime_error("reading the seed state failed");

        {
            std::vector<uint8_t> state = tile_state(seed, (uint32_t) n_seed, (uint32_t) depth);
            llama_memory_clear(mem, false);
            if (llama_state_seq_set_data(ctx, state.data(), state.size(), 0) != state.size()) throw std::runtime_error("loading the tiled state failed");
        }
        if (llama_memory_seq_pos_min(mem, 0) != 0 || llama_memory_seq_pos_max(mem, 0) != depth - 1)
            throw std::runtime_error("the loaded state does not hold positions 0..depth-1");

        std::vector<double> ts;
        for (int r = 0; r < reps; r++) {
            llama_memory_seq_rm(mem, 0, depth, -1);  // back to the tiled depth before each repetition
            const uint64_t t0 = now_ns();
            gen(ctx, n_gen, n_vocab, first);
            ts.push_back(n_gen / ((now_ns() - t0) / 1e9));
        }
        if (llama_memory_seq_pos_max(mem, 0) != depth + n_gen - 1) throw std::runtime_error("decode did not run at the tiled depth");

        double sum = 0;
        for (double x : ts) sum += x;
        printf("{\"n_prompt\": 0, \"n_gen\": %d, \"n_depth\": %d, \"seed\": %d, \"avg_ts\": %.6f, \"samples_ts\": [", n_gen, depth, n_seed, sum / ts.size());
        for (size_t i = 0; i < ts.size(); i++) printf("%s%.6f", i ? ", " : "", ts[i]);
        printf("]}\n");

        llama_free(ctx);
        ggml_threadpool_free(pool);
        llama_model_free(model);
        llama_backend_free();
    } catch (const std::exception & e) {
        fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
