// `kvpack convert MODEL.bin OUT.gguf`: a llama2.c checkpoint to an f32 llama GGUF llama.cpp can load;
// `kvpack convert HF-DIR OUT.gguf`: a Hugging Face directory to GGUF (tensors in their dtype).
import type { Command } from 'commander';
import { convertLlama2c } from '../gguf/convert.js';
import { convertHfDir } from '../hf/convert.js';
import { isHfDir } from '../hf/load.js';

export function register(program: Command): void {
  program
    .command('convert')
    .description('convert a llama2.c checkpoint (.bin, f32 llama) or a Hugging Face directory to GGUF')
    .argument('<model>', 'llama2.c checkpoint (legacy export: 7 int32 header + float32 weights) or HF directory (config.json + safetensors)')
    .argument('<out>', 'GGUF file to write')
    .option(
      '--vocab <file>',
      'llama2.c checkpoints: their tokenizer file (default tok<vocab_size>.bin or tokenizer.bin beside it; else a placeholder vocabulary)',
    )
    .action((model: string, out: string, o: { vocab?: string }) => {
      const m = isHfDir(model) ? convertHfDir(model, out) : convertLlama2c(model, out, { vocab: o.vocab });
      const h = m.hparams;
      const params = [...m.tensors.values()].reduce((s, t) => s + t.dims.reduce((a, b) => a * b, 1), 0);
      console.log(
        `wrote ${out}: ${m.arch}, ${h.nLayer} layers, dim ${h.nEmbd}, ${h.nHead} heads / ${h.nHeadKv} kv heads, ` +
          `vocab ${h.nVocab}, ctx ${h.nCtxTrain}, ${m.tensors.size} tensors, ${params} parameters`,
      );
      if (!m.metadata.has('tokenizer.ggml.tokens')) console.log('note: no tokenizer metadata was written; llama.cpp needs a vocabulary to load the file');
    });
}
