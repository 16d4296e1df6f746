// Tokenizer module surface: build from GGUF metadata, encode, decode, stream.
export { createTokenizer, Tokenizer, type EncodeOptions } from './tokenizer.js';
export { StreamDecoder, type DecodeOptions } from './decode.js';
export { TokenType, Keys as TokenizerKeys, type TokenizerMetadata } from './metadata.js';
export { NO_TOKEN, loadVocab, type Vocab, type TokenizerModel } from './vocab.js';
export { PRE_TOKENIZERS, getPreTokenizer, type PreTokenizer } from './pretokenize.js';
export {
  HF_PIPELINE_KEY,
  type HfPipeline,
  type AddedTokenFlags,
  type Metaspace,
  type NormalizerStep,
} from './hf-pipeline.js';
