// `kvpack convert MODEL.bin OUT.gguf`: a llama2.c checkpoint to an f32 llama GGUF llama.cpp can load.
import type { Command } from 'commander';
import { convertLlama2c } from '../gguf/convert.js';

export function register(program: Command): void {
  program
    .command('convert')
    .description('convert a llama2.c checkpoint (.bin) to GGUF (f32, llama architecture)')
    .argument('<model>', 'llama2.c checkpoint (legacy export: 7 int32 header + float32 weights)')
    .argument('<out>', 'GGUF file to write')
    .option('--vocab <file>', "the checkpoint's llama2.c tokenizer (default tok<vocab_size>.bin or tokenizer.bin beside it; else a placeholder vocabulary)")
    .action((model: string, out: string, o: { vocab?: string }) => {
      const m = convertLlama2c(model, out, { vocab: o.vocab });
      const h = m.hparams;
      const params = [...m.tensors.values()].reduce((s, t) => s + t.dims.reduce((a, b) => a * b, 1), 0);
      console.log(
        `wrote ${out}: llama, ${h.nLayer} layers, dim ${h.nEmbd}, ${h.nHead} heads / ${h.nHeadKv} kv heads, ` +
          `vocab ${h.nVocab}, ctx ${h.nCtxTrain}, ${m.tensors.size} tensors, ${params} parameters`,
      );
    });
}
